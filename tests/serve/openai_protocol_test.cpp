#include "lumen/serve/openai_protocol.h"

#include <gtest/gtest.h>

namespace lumen::serve {
namespace {

// The ApiError a parse throws (status, param, code), or a failure when it parses.
ApiError error_of(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an ApiError";
  return ApiError(0, "");
}

TEST(OpenAiProtocol, ChatRequestFields) {
  ChatRequest r = parse_chat_request(R"({"model": "m", "messages": [{"role": "system", "content": "s"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null}], "temperature": 0.5, "top_p": 0.9, "top_k": 4, "seed": -3,
      "max_completion_tokens": 7, "stop": ["x", "yz"], "stream": true, "stream_options": {"include_usage": true},
      "user": "ignored", "presence_penalty": 0})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.fields.model, "m");
  EXPECT_DOUBLE_EQ(r.fields.params.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.fields.params.sampling.top_p, 0.9);
  EXPECT_EQ(r.fields.params.sampling.top_k, 4);
  EXPECT_EQ(r.fields.params.sampling.seed, static_cast<uint64_t>(-3));
  EXPECT_TRUE(r.fields.seed_given);
  EXPECT_EQ(r.fields.max_tokens, 7);
  EXPECT_EQ(r.fields.params.stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_TRUE(r.fields.stream && r.fields.include_usage);
}

TEST(OpenAiProtocol, DefaultsAreOpenAis) {
  CompletionRequest r = parse_completion_request(R"({"prompt": ["one prompt"], "max_tokens": null})");
  EXPECT_EQ(r.prompt_text, "one prompt");
  EXPECT_DOUBLE_EQ(r.fields.params.sampling.temperature, 1.0);
  EXPECT_FALSE(r.fields.max_tokens.has_value());
  EXPECT_FALSE(r.fields.stream || r.fields.seed_given);
  EXPECT_EQ(parse_completion_request(R"({"prompt": [1, 2, 3], "stop": "s"})").prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
}

TEST(OpenAiProtocol, BadRequestsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
    const char* code;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"messages": [)", "", "invalid_json"},
           {R"({})", "messages", "missing_required_parameter"},
           {R"({"messages": "hi"})", "messages", "invalid_value"},
           {R"({"messages": [{"role": 3, "content": "x"}]})", "messages[0].role", "invalid_value"},
           {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content", "invalid_value"},
           {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature", "invalid_value"},
           {R"({"messages": [{"role": "user", "content": "x"}], "temperature": true})", "temperature", "invalid_value"},
           {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", "top_p", "invalid_value"},
           {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 2.5})", "max_tokens", "invalid_value"},
           {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop", "invalid_value"},
           {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "n", "invalid_value"},
           {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true})", "logprobs", "invalid_value"},
           {R"({"messages": [{"role": "user", "content": "x"}], "model": 5})", "model", "invalid_value"},
       }) {
    ApiError e = error_of([&] { parse_chat_request(c.body); });
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_EQ(e.code, c.code) << c.body;
    nlohmann::json j = error_json(e);
    EXPECT_EQ(j["error"]["message"], e.what());
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  }
  EXPECT_EQ(error_of([] { parse_completion_request(R"({"prompt": [1, -2]})"); }).param, "prompt");
  EXPECT_EQ(error_of([] { parse_completion_request(R"({"prompt": ["a", "b"]})"); }).param, "prompt");
  EXPECT_EQ(error_of([] { parse_completion_request(R"("just a string")"); }).status, 400);
  EXPECT_EQ(error_of([] { parse_embedding_request(R"({"input": [[1, 2]]})"); }).param, "input");
  EXPECT_EQ(error_of([] { parse_embedding_request(R"({"input": "x", "encoding_format": "hex"})"); }).param, "encoding_format");
}

TEST(OpenAiProtocol, Base64OfFloatsIsLittleEndianBytes) {
  float one = 1.0f;  // bytes 00 00 80 3f
  EXPECT_EQ(base64_floats(&one, 1), "AACAPw==");
  float two[2] = {1.0f, -2.0f};  // 00 00 80 3f 00 00 00 c0
  EXPECT_EQ(base64_floats(two, 2), "AACAPwAAAMA=");
  EXPECT_EQ(parse_embedding_request(R"({"input": ["a", "b"]})").input.size(), 2u);
}

}  // namespace
}  // namespace lumen::serve
