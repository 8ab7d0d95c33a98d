#include "lumen/serve/http_server.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "lumen/core/error.h"
#include "lumen/serve/server_context.h"

namespace lumen::serve {

using nlohmann::json;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status, error_json(e)); }

void ServerContext::count(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(counts_mutex);
  ++http_counts[{route, status}];
}

void ServerContext::check_model(const std::string& requested) const {
  if (requested.empty() || requested == model.name) return;
  throw ApiError(404, "the model '" + requested + "' does not exist; this server serves '" + model.name + "'",
                 "invalid_request_error", "model", "model_not_found");
}

namespace {

// A label for /metrics: the known routes by name, anything else as "other".
std::string route_label(const std::string& path) {
  for (const char* known : {"/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/models", "/health", "/metrics"}) {
    if (path == known) return known;
  }
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  return "other";
}

json model_json(const std::string& name) {
  return {{"id", name}, {"object", "model"}, {"created", unix_time()}, {"owned_by", "lumen"}};
}

// One Prometheus metric. (A plain function: GCC 12's IPA-SRA miscompiled the
// capturing lambda this was, passing it a bad stream pointer at -O3.)
void write_metric(std::ostream& out, const char* name, const char* type, const char* help, double value) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << value << "\n";
}

std::string metrics_text(ServerContext& ctx) {
  std::ostringstream out;
  auto metric = [&out](const char* name, const char* type, const char* help, double value) {
    write_metric(out, name, type, help, value);
  };
  out << "# HELP lumen_http_requests_total HTTP requests answered, by route and status.\n# TYPE lumen_http_requests_total counter\n";
  {
    std::lock_guard<std::mutex> lock(ctx.counts_mutex);
    for (const auto& [key, n] : ctx.http_counts) {
      out << "lumen_http_requests_total{route=\"" << key.first << "\",status=\"" << key.second << "\"} " << n << "\n";
    }
  }
  if (!ctx.model.engine) return out.str();
  EngineMetrics m = ctx.model.engine->metrics();
  metric("lumen_requests_finished_total", "counter", "Generation requests that finished (stop or length).", static_cast<double>(m.requests_finished));
  metric("lumen_requests_cancelled_total", "counter", "Generation requests cancelled (client gone, shutdown).", static_cast<double>(m.requests_cancelled));
  metric("lumen_requests_failed_total", "counter", "Generation requests whose run failed.", static_cast<double>(m.requests_failed));
  metric("lumen_prompt_tokens_total", "counter", "Prompt tokens prefilled.", static_cast<double>(m.prompt_tokens));
  metric("lumen_generated_tokens_total", "counter", "Tokens generated.", static_cast<double>(m.generated_tokens));
  metric("lumen_busy_seconds_total", "counter", "Seconds the engine spent running requests.", m.busy_seconds);
  metric("lumen_generated_tokens_per_second", "gauge", "Tokens generated per busy second since start.",
         m.busy_seconds > 0 ? static_cast<double>(m.generated_tokens) / m.busy_seconds : 0.0);
  metric("lumen_queue_depth", "gauge", "Requests waiting for the engine.", static_cast<double>(m.queued));
  metric("lumen_requests_running", "gauge", "Requests the engine is running.", static_cast<double>(m.running));
  metric("lumen_kv_positions_in_use", "gauge", "KV-cache positions holding a sequence.", static_cast<double>(m.kv_positions_in_use));
  metric("lumen_kv_positions_total", "gauge", "KV-cache positions.", static_cast<double>(m.kv_positions_total));
  metric("lumen_kv_blocks_in_use", "gauge", "Paged KV-cache blocks held by sequences (0 without a paged cache).",
         static_cast<double>(m.kv_blocks_in_use));
  metric("lumen_kv_blocks_free", "gauge", "Paged KV-cache blocks free.", static_cast<double>(m.kv_blocks_total - m.kv_blocks_in_use));
  metric("lumen_preemptions_total", "counter", "Sequences preempted for KV blocks (prefilled again later).",
         static_cast<double>(m.preemptions));
  metric("lumen_decode_steps_total", "counter", "Batched decode steps run.", static_cast<double>(m.decode_steps));
  metric("lumen_decode_rows_total", "counter", "Sequences advanced by decode steps (rows / steps: the mean batch).",
         static_cast<double>(m.decode_rows));
  return out.str();
}

void handle_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  EmbeddingRequest r = parse_embedding_request(req.body);
  ctx.check_model(r.model);
  if (!ctx.model.encoder) {
    throw ApiError(400, "model '" + ctx.model.name + "' is not a sentence encoder: it has no embeddings (serve a BERT-style model directory)",
                   "invalid_request_error", "model", "model_not_supported");
  }
  int64_t tokens = 0;
  for (const std::string& text : r.input) tokens += static_cast<int64_t>(ctx.model.encoder->tokenize(text).size());
  Array e;
  {
    std::lock_guard<std::mutex> lock(ctx.encoder_mutex);
    e = ctx.model.encoder->embed(r.input);
  }
  const auto* v = static_cast<const float*>(e.data());
  int64_t dim = e.shape()[1];
  json data = json::array();
  for (size_t i = 0; i < r.input.size(); ++i) {
    const float* row = v + static_cast<int64_t>(i) * dim;
    json item = {{"object", "embedding"}, {"index", i}};
    if (r.base64) item["embedding"] = base64_floats(row, static_cast<size_t>(dim));
    else item["embedding"] = std::vector<float>(row, row + dim);
    data.push_back(std::move(item));
  }
  send_json(res, 200, {{"object", "list"}, {"data", data}, {"model", ctx.model.name},
                       {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

// Compares without stopping at the first difference, so the time taken says nothing about the key.
bool same_secret(const std::string& given, const std::string& expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  return diff == 0;
}

}  // namespace

struct HttpServer::Impl {
  ServerContext ctx;
  ServerOptions options;
  httplib::Server server;
  int port = -1;

  void route(const char* method, const std::string& pattern,
             std::function<void(ServerContext&, const httplib::Request&, httplib::Response&)> handler);
};

void HttpServer::Impl::route(const char* method, const std::string& pattern,
                             std::function<void(ServerContext&, const httplib::Request&, httplib::Response&)> handler) {
  bool needs_key = !options.api_key.empty() && pattern.rfind("/v1/", 0) == 0;
  auto wrapped = [this, handler, needs_key](const httplib::Request& req, httplib::Response& res) {
    try {
      if (needs_key && !same_secret(req.get_header_value("Authorization"), "Bearer " + options.api_key)) {
        throw ApiError(401, "invalid or missing API key (send the header Authorization: Bearer <key>)", "invalid_request_error", "",
                       "invalid_api_key");
      }
      handler(ctx, req, res);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const Error& e) {  // lumen refused something about this request: the client's to fix
      send_error(res, ApiError(400, e.what()));
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, std::string("internal error: ") + e.what(), "server_error"));
    }
  };
  if (std::string(method) == "GET") server.Get(pattern, wrapped);
  else server.Post(pattern, wrapped);
}

HttpServer::HttpServer(ServedModel model, ServerOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.ctx.model = std::move(model);
  m.options = std::move(options);
  const models::ChatFormat& chat = m.ctx.model.chat;
  if (m.ctx.model.engine && !chat.template_source.empty()) {
    m.ctx.chat_template = std::make_unique<io::ChatTemplate>(chat.template_source, chat.bos_token, chat.eos_token);
  }
  m.ctx.max_queue = m.options.max_queue;
  int threads = std::max(1, m.options.connection_threads);
  m.server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  m.server.set_payload_max_length(m.options.max_body_bytes);
  m.server.set_keep_alive_timeout(2);  // an idle connection delays a graceful stop at most this long
  m.route("POST", "/v1/completions", handle_completions);
  m.route("POST", "/v1/chat/completions", handle_chat_completions);
  m.route("POST", "/v1/embeddings", handle_embeddings);
  m.route("GET", "/v1/models", [](ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"object", "list"}, {"data", json::array({model_json(ctx.model.name)})}});
  });
  m.route("GET", R"(/v1/models/(.+))", [](ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    ctx.check_model(req.matches[1].str());
    send_json(res, 200, model_json(ctx.model.name));
  });
  m.route("GET", "/health", [](ServerContext&, const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"status", "ok"}});
  });
  m.route("GET", "/metrics", [](ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(ctx), "text/plain; version=0.0.4");
  });
  // Routes that match nothing, and statuses httplib sets itself (413, 400 on a bad request line).
  m.server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      send_error(res, ApiError(404, "no route " + req.method + " " + req.path, "invalid_request_error", "", "unknown_url"));
    } else {
      send_error(res, ApiError(res.status, "the request was refused (HTTP " + std::to_string(res.status) + ")"));
    }
  });
  bool log = m.options.log_requests;
  m.server.set_logger([this, log](const httplib::Request& req, const httplib::Response& res) {
    impl_->ctx.count(route_label(req.path), res.status);
    if (log) std::fprintf(stderr, "%s %s %s %d\n", req.remote_addr.c_str(), req.method.c_str(), req.path.c_str(), res.status);
  });
}

HttpServer::~HttpServer() = default;

void HttpServer::bind() {
  Impl& m = *impl_;
  if (m.options.port == 0) {
    m.port = m.server.bind_to_any_port(m.options.host);
  } else {
    m.port = m.server.bind_to_port(m.options.host, m.options.port) ? m.options.port : -1;
  }
  if (m.port < 0) fail("serve: cannot listen on ", m.options.host, ":", m.options.port, " (in use, or not an address of this machine)");
}

int HttpServer::port() const { return impl_->port; }

void HttpServer::serve() {
  if (impl_->port < 0) bind();
  impl_->server.listen_after_bind();
}

void HttpServer::stop() { impl_->server.stop(); }

}  // namespace lumen::serve
