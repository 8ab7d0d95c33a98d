// The OpenAI wire format: request bodies parsed into typed requests (every
// missing or ill-typed field an ApiError naming it), and the JSON of
// responses, stream chunks and errors.
//
// Only the fields lumen acts on are read; others a client commonly sends
// (user, presence_penalty at 0, ...) are ignored, and ones that would change
// the answer in a way lumen does not implement (n > 1, logprobs, tools) are
// refused by name rather than silently dropped.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lumen/io/chat_template.h"
#include "lumen/serve/engine.h"

namespace lumen::serve {

// An error answered with OpenAI's shape:
// {"error": {"message", "type", "param", "code"}} and an HTTP status.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string type = "invalid_request_error", std::string param = "",
           std::string code = "");
  int status;
  std::string type, param, code;
};
nlohmann::json error_json(const ApiError& e);
// A field of the wrong type or value: 400 naming `param`.
[[noreturn]] void invalid_field(const std::string& param, const std::string& message);

// Fields shared by completions and chat completions.
struct GenerationFields {
  std::string model;                    // empty: not given
  RequestParams params;
  std::optional<int64_t> max_tokens;    // not given: the endpoint's default
  bool seed_given = false;
  bool stream = false;
  bool include_usage = false;           // stream_options.include_usage
};

struct CompletionRequest {
  GenerationFields fields;
  std::string prompt_text;              // when the prompt is a string
  std::vector<int32_t> prompt_tokens;   // when it is a list of token ids
  bool echo = false;
};

struct ChatRequest {
  GenerationFields fields;
  std::vector<io::ChatMessage> messages;
};

struct EmbeddingRequest {
  std::string model;
  std::vector<std::string> input;
  bool base64 = false;                  // encoding_format "base64" (the openai client's default)
};

// Each throws ApiError: 400 for malformed JSON, a body that is not an
// object, or a missing / ill-typed / out-of-range field (named in `param`).
nlohmann::json parse_body(const std::string& body);
CompletionRequest parse_completion_request(const std::string& body);
ChatRequest parse_chat_request(const std::string& body);
EmbeddingRequest parse_embedding_request(const std::string& body);

// "cmpl-..." / "chatcmpl-..." ids, unique in this process.
std::string new_response_id(const char* prefix);
int64_t unix_time();

nlohmann::json usage_json(const Outcome& o);
// finish_reason as OpenAI spells it ("stop", "length").
std::string openai_finish_reason(FinishReason r);

// Base64 of the bytes of `values` (little-endian float32), as OpenAI encodes embeddings.
std::string base64_floats(const float* values, size_t count);

}  // namespace lumen::serve
