// What the route handlers of HttpServer share (internal to lumen/serve): the
// served model, its compiled chat template, and the HTTP request counters.
#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "lumen/io/chat_template.h"
#include "lumen/serve/http_server.h"
#include "lumen/serve/openai_protocol.h"

namespace lumen::serve {

struct ServerContext {
  ServedModel model;
  int64_t max_queue = 0;  // ServerOptions::max_queue
  std::unique_ptr<io::ChatTemplate> chat_template;  // null: the model has none
  std::mutex encoder_mutex;                         // one embedding batch at a time (one compiled program)
  std::mutex counts_mutex;
  std::map<std::pair<std::string, int>, int64_t> http_counts;  // (route, status) -> requests

  void count(const std::string& route, int status);
  // 404 unless `requested` is empty or the served model's name.
  void check_model(const std::string& requested) const;
};

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_error(httplib::Response& res, const ApiError& e);

// The generation routes (generation_routes.cpp).
void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace lumen::serve
