#include "lumen/serve/openai_protocol.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>

namespace lumen::serve {

using nlohmann::json;

ApiError::ApiError(int status_, std::string message, std::string type_, std::string param_, std::string code_)
    : std::runtime_error(std::move(message)), status(status_), type(std::move(type_)), param(std::move(param_)), code(std::move(code_)) {}

json error_json(const ApiError& e) {
  json err = {{"message", e.what()}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return json{{"error", err}};
}

void invalid_field(const std::string& param, const std::string& message) {
  throw ApiError(400, "'" + param + "': " + message, "invalid_request_error", param, "invalid_value");
}

namespace {

// The value of `key`, or nullptr when it is absent or null.
const json* field(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number_field(const json& body, const char* key, double lo, double hi) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) invalid_field(key, "expected a number, got " + std::string(v->type_name()));
  double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    invalid_field(key, std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return x;
}

std::optional<int64_t> integer_field(const json& body, const char* key, int64_t lo, int64_t hi) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  bool integral = v->is_number_integer() || (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
                                             std::fabs(v->get<double>()) < 9e15);
  if (!integral) invalid_field(key, "expected an integer, got " + v->dump());
  int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX
              : v->is_number_integer()                                                      ? v->get<int64_t>()
                                                                                            : static_cast<int64_t>(v->get<double>());
  if (x < lo || x > hi) invalid_field(key, std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

std::optional<bool> bool_field(const json& body, const char* key) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) invalid_field(key, "expected true or false, got " + v->dump());
  return v->get<bool>();
}

std::string string_field(const json& body, const char* key) {
  const json* v = field(body, key);
  if (!v) return "";
  if (!v->is_string()) invalid_field(key, "expected a string, got " + std::string(v->type_name()));
  return v->get<std::string>();
}

std::vector<std::string> stop_field(const json& body) {
  const json* v = field(body, "stop");
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) invalid_field("stop", "expected a string or a list of strings");
  if (v->size() > 16) invalid_field("stop", "at most 16 stop strings, got " + std::to_string(v->size()));
  std::vector<std::string> stop;
  for (const json& s : *v) {
    if (!s.is_string()) invalid_field("stop", "every stop sequence must be a string, got " + s.dump());
    stop.push_back(s.get<std::string>());
  }
  return stop;
}

// Options that would change the answer in ways lumen does not implement.
void refuse_unsupported(const json& body) {
  if (auto n = integer_field(body, "n", 1, 128); n && *n != 1) invalid_field("n", "only n = 1 is supported");
  if (auto b = integer_field(body, "best_of", 1, 128); b && *b != 1) invalid_field("best_of", "only best_of = 1 is supported");
  for (const char* key : {"presence_penalty", "frequency_penalty"}) {
    if (auto p = number_field(body, key, -2, 2); p && *p != 0) invalid_field(key, "penalties are not supported (only 0)");
  }
  if (const json* lp = field(body, "logprobs"); lp && !(lp->is_boolean() && !lp->get<bool>())) {
    invalid_field("logprobs", "log probabilities are not supported");
  }
  if (const json* bias = field(body, "logit_bias"); bias && !bias->empty()) invalid_field("logit_bias", "logit_bias is not supported");
  for (const char* key : {"tools", "functions", "suffix"}) {
    if (const json* v = field(body, key); v && !v->empty()) invalid_field(key, std::string(key) + " is not supported");
  }
  if (const json* rf = field(body, "response_format"); rf && !(rf->is_object() && rf->value("type", "") == "text")) {
    invalid_field("response_format", "only {\"type\": \"text\"} is supported");
  }
}

GenerationFields generation_fields(const json& body, bool chat) {
  refuse_unsupported(body);
  GenerationFields f;
  f.model = string_field(body, "model");
  models::SamplingOptions& s = f.params.sampling;
  s.temperature = number_field(body, "temperature", 0, 2).value_or(1.0);
  s.top_p = number_field(body, "top_p", 0, 1).value_or(1.0);
  if (s.top_p == 0) invalid_field("top_p", "must be greater than 0");
  s.top_k = integer_field(body, "top_k", 0, INT32_MAX).value_or(0);
  if (auto seed = integer_field(body, "seed", INT64_MIN, INT64_MAX)) {
    s.seed = static_cast<uint64_t>(*seed);
    f.seed_given = true;
  }
  f.max_tokens = integer_field(body, "max_tokens", 1, INT32_MAX);
  if (chat) {
    if (auto m = integer_field(body, "max_completion_tokens", 1, INT32_MAX)) f.max_tokens = m;
  }
  f.params.stop = stop_field(body);
  f.stream = bool_field(body, "stream").value_or(false);
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) invalid_field("stream_options", "expected an object");
    if (auto u = bool_field(*so, "include_usage")) f.include_usage = *u;
  }
  return f;
}

std::string message_content(const json& m, size_t index) {
  std::string param = "messages[" + std::to_string(index) + "].content";
  const json* c = field(m, "content");
  if (!c) return "";
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) invalid_field(param, "expected a string or a list of content parts");
  std::string text;
  for (const json& part : *c) {  // [{"type": "text", "text": ...}]: the text parts, joined
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
      invalid_field(param, "only text content parts ({\"type\": \"text\", \"text\": ...}) are supported");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

json parse_body(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what(), "invalid_request_error", "", "invalid_json");
  }
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object, got " + std::string(j.type_name()));
  return j;
}

CompletionRequest parse_completion_request(const std::string& text) {
  json body = parse_body(text);
  CompletionRequest r;
  r.fields = generation_fields(body, false);
  r.echo = bool_field(body, "echo").value_or(false);
  if (r.echo) invalid_field("echo", "echo is not supported");
  const json* p = field(body, "prompt");
  if (!p) throw ApiError(400, "'prompt' is required", "invalid_request_error", "prompt", "missing_required_parameter");
  if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) p = &(*p)[0];  // ["text"]: one prompt
  if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
    if (r.prompt_text.empty()) invalid_field("prompt", "the prompt is empty");
    return r;
  }
  if (!p->is_array() || p->empty()) invalid_field("prompt", "expected a string, a list of one string, or a list of token ids");
  for (const json& t : *p) {
    if (t.is_string()) invalid_field("prompt", "only one prompt per request is supported");
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      invalid_field("prompt", "token ids must be non-negative integers, got " + t.dump());
    }
    r.prompt_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return r;
}

ChatRequest parse_chat_request(const std::string& text) {
  json body = parse_body(text);
  ChatRequest r;
  r.fields = generation_fields(body, true);
  const json* m = field(body, "messages");
  if (!m) throw ApiError(400, "'messages' is required", "invalid_request_error", "messages", "missing_required_parameter");
  if (!m->is_array() || m->empty()) invalid_field("messages", "expected a non-empty list of messages");
  for (size_t i = 0; i < m->size(); ++i) {
    const json& msg = (*m)[i];
    std::string where = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) invalid_field(where, "expected an object with 'role' and 'content'");
    const json* role = field(msg, "role");
    if (!role || !role->is_string()) invalid_field(where + ".role", "expected a string (system, user, assistant, ...)");
    r.messages.push_back({role->get<std::string>(), message_content(msg, i)});
  }
  return r;
}

EmbeddingRequest parse_embedding_request(const std::string& text) {
  json body = parse_body(text);
  EmbeddingRequest r;
  r.model = string_field(body, "model");
  std::string format = string_field(body, "encoding_format");
  if (!format.empty() && format != "float" && format != "base64") invalid_field("encoding_format", "expected 'float' or 'base64'");
  r.base64 = format == "base64";
  if (field(body, "dimensions")) invalid_field("dimensions", "choosing the embedding size is not supported");
  const json* in = field(body, "input");
  if (!in) throw ApiError(400, "'input' is required", "invalid_request_error", "input", "missing_required_parameter");
  if (in->is_string()) {
    r.input.push_back(in->get<std::string>());
  } else if (in->is_array() && !in->empty()) {
    for (const json& s : *in) {
      if (!s.is_string()) invalid_field("input", "expected a string or a list of strings (token ids are not supported), got " + s.dump());
      r.input.push_back(s.get<std::string>());
    }
  } else {
    invalid_field("input", "expected a string or a non-empty list of strings");
  }
  if (r.input.size() > 2048) invalid_field("input", "at most 2048 inputs per request");
  return r;
}

std::string new_response_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  return std::string(prefix) + std::to_string(unix_time()) + "-" + std::to_string(++counter);
}

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json usage_json(const Outcome& o) {
  return {{"prompt_tokens", o.prompt_tokens}, {"completion_tokens", o.completion_tokens},
          {"total_tokens", o.prompt_tokens + o.completion_tokens}};
}

std::string openai_finish_reason(FinishReason r) { return r == FinishReason::Length ? "length" : "stop"; }

std::string base64_floats(const float* values, size_t count) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(count * 4);
  std::memcpy(bytes.data(), values, bytes.size());  // x86-64 and aarch64 Linux are little-endian, as the format
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint32_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint32_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= bytes[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

}  // namespace lumen::serve
