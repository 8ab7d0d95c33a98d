#include "lumen/serve/engine.h"

#include <cmath>

#include "lumen/core/error.h"

namespace lumen::serve {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "unknown";
}

void check_request(const std::vector<int32_t>& prompt, const RequestParams& params, int64_t context, int64_t vocab) {
  if (prompt.empty()) fail("the prompt is empty (at least one token is needed)");
  if (static_cast<int64_t>(prompt.size()) >= context) {
    fail("the prompt is ", prompt.size(), " tokens; the context holds ", context,
         " (prompt and generated tokens together); shorten the prompt");
  }
  for (int32_t t : prompt) {
    if (t < 0 || t >= vocab) fail("prompt token ", t, " is outside the vocabulary (0..", vocab - 1, ")");
  }
  const models::SamplingOptions& s = params.sampling;
  if (params.max_tokens < 1) fail("max_tokens is ", params.max_tokens, "; it must be at least 1");
  if (!std::isfinite(s.temperature) || s.temperature < 0) fail("temperature is ", s.temperature, "; it must be >= 0");
  if (!(s.top_p > 0 && s.top_p <= 1)) fail("top_p is ", s.top_p, "; it must be in (0, 1]");
  if (s.top_k < 0) fail("top_k is ", s.top_k, "; it must be >= 0");
}

}  // namespace lumen::serve
