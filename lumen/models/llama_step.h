// Feeding one step's tokens to a Llama step program (the graphs llama.h
// builds), shared by the single-process runner and the distributed one.
#pragma once

#include <cstdint>
#include <vector>

#include "lumen/core/array.h"
#include "lumen/core/error.h"

namespace lumen::models {

// Prefill steps are padded to a multiple of this many tokens, so their
// kernels vectorize and tile along the sequence; the padding rows written to
// the cache lie past the real tokens and are overwritten later.
inline constexpr int64_t kLlamaSeqBlock = 16;

// Checks `tokens` against the KV cache (`past` of `capacity` positions used)
// and the vocabulary, binds `past` and sets the `tokens` input — padded to
// whole blocks (binding `seq_blocks`, and `real` where the program has it)
// when `padded`. Program or DistProgram.
template <typename StepProgram>
void feed_step(StepProgram& p, const std::vector<int32_t>& tokens, bool padded, int64_t past, int64_t capacity,
               int64_t vocab) {
  if (tokens.empty()) fail("llama: no tokens to run");
  auto n = static_cast<int64_t>(tokens.size());
  if (past + n > capacity) {
    fail("llama: ", past, " cached + ", n, " new tokens exceed the KV-cache capacity of ", capacity,
         " positions (reset, or raise the capacity)");
  }
  for (int32_t t : tokens) {
    if (t < 0 || t >= vocab) fail("llama: token ", t, " is outside the vocabulary [0, ", vocab, ")");
  }
  if (p.has_dim("past")) p.bind("past", past);  // a program for a prompt from the start has past = 0 built in
  if (!padded) {
    p.set("tokens", Array::from_ints(tokens, {1, n}));
    return;
  }
  int64_t blocks = (n + kLlamaSeqBlock - 1) / kLlamaSeqBlock;
  std::vector<int32_t> filled = tokens;
  filled.resize(static_cast<size_t>(blocks * kLlamaSeqBlock), 0);
  p.set("tokens", Array::from_ints(filled, {1, blocks * kLlamaSeqBlock}));
  p.bind("seq_blocks", blocks);
  if (p.has_dim("real")) p.bind("real", n);
}

}  // namespace lumen::models
