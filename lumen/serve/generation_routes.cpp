// /v1/completions and /v1/chat/completions: a parsed request becomes an
// engine submission; the answer is collected (non-streaming) or sent as
// server-sent events while the engine produces it.
#include <chrono>
#include <condition_variable>
#include <random>

#include "lumen/core/error.h"
#include "lumen/serve/server_context.h"

namespace lumen::serve {

using nlohmann::json;

namespace {

// One request's text and outcome, passed from the engine's thread to the connection's.
struct Generation {
  std::mutex mutex;
  std::condition_variable changed;
  std::string unsent;  // text not yet taken by the connection
  bool done = false;
  Outcome outcome;
  Engine::RequestId id = 0;
};

// How the two endpoints differ in their JSON.
struct Shape {
  bool chat = false;
  std::string id, model;
  int64_t created = 0;

  json choice_text(const std::string& text, const json& finish_reason, bool delta) const {
    json c = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
    if (!chat) c["text"] = text;
    else if (delta) c["delta"] = text.empty() ? json::object() : json{{"content", text}};
    else c["message"] = {{"role", "assistant"}, {"content", text}};
    return c;
  }
  json envelope(json choices, bool chunk) const {
    const char* object = chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return {{"id", id}, {"object", object}, {"created", created}, {"model", model}, {"choices", std::move(choices)}};
  }
};

std::string sse(const json& j) { return "data: " + j.dump() + "\n\n"; }

ApiError context_overflow(const char* prompt_param, int64_t prompt, int64_t asked, int64_t context) {
  std::string msg = "this model's context holds " + std::to_string(context) + " tokens; the prompt ('" + prompt_param + "') is " +
                    std::to_string(prompt) + " tokens" +
                    (asked > 0 ? " and max_tokens asks for " + std::to_string(asked) + " more" : "") +
                    "; shorten the prompt or lower max_tokens";
  return ApiError(400, msg, "invalid_request_error", asked > 0 ? "max_tokens" : prompt_param, "context_length_exceeded");
}

// Resolves max_tokens and the seed, and checks the request fits the context.
RequestParams resolve(const GenerationFields& f, int64_t prompt_tokens, int64_t context, int64_t default_max, const char* prompt_param) {
  RequestParams p = f.params;
  if (prompt_tokens >= context) throw context_overflow(prompt_param, prompt_tokens, 0, context);
  if (f.max_tokens && prompt_tokens + *f.max_tokens > context) throw context_overflow(prompt_param, prompt_tokens, *f.max_tokens, context);
  p.max_tokens = f.max_tokens ? *f.max_tokens : std::min(default_max, context - prompt_tokens);
  if (!f.seed_given && p.sampling.temperature > 0) p.sampling.seed = std::random_device{}();
  return p;
}

std::shared_ptr<Generation> submit(ServerContext& ctx, std::vector<int32_t> prompt, const RequestParams& params) {
  if (ctx.max_queue > 0 && ctx.model.engine->metrics().queued >= ctx.max_queue) {
    throw ApiError(503, "the server is busy: " + std::to_string(ctx.max_queue) + " requests are waiting; retry later", "server_error",
                   "", "server_overloaded");
  }
  auto g = std::make_shared<Generation>();
  try {
    g->id = ctx.model.engine->submit(
        std::move(prompt), params,
        [g](int32_t, const std::string& text) {
          std::lock_guard<std::mutex> lock(g->mutex);
          g->unsent += text;
          g->changed.notify_all();
        },
        [g](const Outcome& o) {
          std::lock_guard<std::mutex> lock(g->mutex);
          g->done = true;
          g->outcome = o;
          g->changed.notify_all();
        });
  } catch (const Error& e) {  // the engine refused it (a bad token id, shutting down): the client's request
    throw ApiError(400, e.what());
  }
  return g;
}

void answer_whole(const Shape& shape, Generation& g, httplib::Response& res) {
  std::unique_lock<std::mutex> lock(g.mutex);
  g.changed.wait(lock, [&] { return g.done; });
  if (g.outcome.reason == FinishReason::Error) throw ApiError(500, "generation failed: " + g.outcome.error, "server_error");
  if (g.outcome.reason == FinishReason::Cancelled) throw ApiError(503, "the request was cancelled (the server is shutting down)", "server_error");
  json body = shape.envelope(json::array({shape.choice_text(g.unsent, openai_finish_reason(g.outcome.reason), false)}), false);
  body["usage"] = usage_json(g.outcome);
  send_json(res, 200, body);
}

// Server-sent events: a chunk per piece of text, the finish reason, usage if asked, [DONE].
void answer_streaming(ServerContext& ctx, const Shape& shape, std::shared_ptr<Generation> g, bool include_usage,
                      httplib::Response& res) {
  Engine* engine = ctx.model.engine;
  auto started = std::make_shared<bool>(false);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [shape, g, include_usage, engine, started](size_t, httplib::DataSink& sink) {
        if (!*started && shape.chat) {  // the role comes first, as OpenAI sends it
          json c = shape.choice_text("", nullptr, true);
          c["delta"] = {{"role", "assistant"}, {"content", ""}};
          std::string first = sse(shape.envelope(json::array({c}), true));
          if (!sink.write(first.data(), first.size())) return false;
        }
        *started = true;
        std::string piece;
        bool done = false;
        Outcome outcome;
        {
          std::unique_lock<std::mutex> lock(g->mutex);
          g->changed.wait_for(lock, std::chrono::milliseconds(200), [&] { return g->done || !g->unsent.empty(); });
          piece.swap(g->unsent);
          done = g->done;
          outcome = g->outcome;
        }
        auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
        if (!piece.empty() && !write(sse(shape.envelope(json::array({shape.choice_text(piece, nullptr, true)}), true)))) {
          engine->cancel(g->id);  // the client left
          return false;
        }
        if (!done) {
          if (!sink.is_writable()) {
            engine->cancel(g->id);
            return false;
          }
          return true;
        }
        if (outcome.reason == FinishReason::Error || outcome.reason == FinishReason::Cancelled) {
          ApiError e(outcome.reason == FinishReason::Error ? 500 : 503,
                     outcome.reason == FinishReason::Error ? "generation failed: " + outcome.error : "the request was cancelled",
                     "server_error");
          write(sse(error_json(e)));
        } else {
          write(sse(shape.envelope(json::array({shape.choice_text("", openai_finish_reason(outcome.reason), true)}), true)));
          if (include_usage) {
            json u = shape.envelope(json::array(), true);
            u["usage"] = usage_json(outcome);
            write(sse(u));
          }
        }
        write("data: [DONE]\n\n");
        sink.done();
        return true;
      },
      [g, engine](bool) {  // the connection is finished with it: a request still running has no reader
        std::lock_guard<std::mutex> lock(g->mutex);
        if (!g->done) engine->cancel(g->id);
      });
}

void require_engine(const ServerContext& ctx) {
  if (!ctx.model.engine) {
    throw ApiError(400, "model '" + ctx.model.name + "' is a sentence encoder: it serves /v1/embeddings only", "invalid_request_error",
                   "model", "model_not_supported");
  }
}

void generate(ServerContext& ctx, const GenerationFields& f, std::vector<int32_t> prompt, const RequestParams& params, bool chat,
              httplib::Response& res) {
  Shape shape{chat, new_response_id(chat ? "chatcmpl-" : "cmpl-"), ctx.model.name, unix_time()};
  std::shared_ptr<Generation> g = submit(ctx, std::move(prompt), params);
  if (f.stream) answer_streaming(ctx, shape, g, f.include_usage, res);
  else answer_whole(shape, *g, res);
}

}  // namespace

void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  CompletionRequest r = parse_completion_request(req.body);
  ctx.check_model(r.fields.model);
  require_engine(ctx);
  std::vector<int32_t> prompt = r.prompt_tokens;
  if (prompt.empty()) prompt = ctx.model.tokenizer->encode(r.prompt_text, true);
  RequestParams p = resolve(r.fields, static_cast<int64_t>(prompt.size()), ctx.model.engine->context_length(), 16, "prompt");
  generate(ctx, r.fields, std::move(prompt), p, false, res);
}

void handle_chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  ChatRequest r = parse_chat_request(req.body);
  ctx.check_model(r.fields.model);
  require_engine(ctx);
  if (!ctx.chat_template) {
    throw ApiError(400, "model '" + ctx.model.name + "' carries no chat template (tokenizer.chat_template); use /v1/completions",
                   "invalid_request_error", "messages", "no_chat_template");
  }
  std::string text;
  try {
    text = ctx.chat_template->render(r.messages, true);
  } catch (const Error& e) {  // the template refused the conversation (raise_exception, a role it does not know)
    throw ApiError(400, std::string("the chat template refused these messages: ") + e.what(), "invalid_request_error", "messages");
  }
  std::vector<int32_t> prompt = ctx.model.tokenizer->encode(text, true);
  RequestParams p = resolve(r.fields, static_cast<int64_t>(prompt.size()), ctx.model.engine->context_length(), INT32_MAX, "messages");
  p.stop_tokens = ctx.model.chat.end_of_turn;
  generate(ctx, r.fields, std::move(prompt), p, true, res);
}

}  // namespace lumen::serve
