// HttpServer — lumen's OpenAI-compatible HTTP API over one served model, on
// cpp-httplib (a thread per connection from its pool; see README.md):
//
//   POST /v1/completions, /v1/chat/completions  (stream: server-sent events)
//   POST /v1/embeddings                          (sentence encoders)
//   GET  /v1/models, /v1/models/{id}, /health, /metrics (Prometheus text)
//
// Every failure is answered with OpenAI's error shape and status (400 bad
// request naming the field, 404 unknown model or route, 500 a failed run);
// no request can stop the server from answering the next one.
#pragma once

#include <memory>
#include <string>

#include "lumen/io/tokenizer/tokenizer.h"
#include "lumen/models/chat_session.h"
#include "lumen/models/sentence_encoder.h"
#include "lumen/serve/engine.h"

namespace lumen::serve {

// What the server serves: a decoder (engine + tokenizer, and a chat format
// when the model has a template) or a sentence encoder. Not owned; they must
// outlive the server.
struct ServedModel {
  std::string name;                             // the model id clients name
  Engine* engine = nullptr;                     // text generation
  const io::Tokenizer* tokenizer = nullptr;     // the engine's tokenizer
  models::ChatFormat chat;                      // template_source empty: no chat endpoint
  models::SentenceEncoder* encoder = nullptr;   // embeddings
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (port() says which)
  size_t max_body_bytes = 16 << 20;
  // Connections served at once (a thread each; an idle keep-alive connection
  // holds its thread for up to 2 s).
  int connection_threads = 32;
  // Generation requests waiting for the engine beyond which new ones get 503
  // (server_overloaded) instead of joining the queue; 0: no limit.
  int64_t max_queue = 256;
  bool log_requests = true;  // one line per request on stderr
  // Non-empty: /v1/* requests must carry `Authorization: Bearer <api_key>`
  // (else 401 invalid_api_key); /health and /metrics stay open.
  std::string api_key;
};

class HttpServer {
 public:
  // Throws lumen::Error if the chat template does not parse.
  HttpServer(ServedModel model, ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; throws lumen::Error naming host and port when it cannot.
  void bind();
  int port() const;
  // Serves until stop(): in-flight requests finish, then it returns.
  void serve();
  void stop();  // from any thread

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lumen::serve
