// Rotary frequencies of a Llama-family config, scaled as transformers' rope
// init functions compute them (modeling_rope_utils): default, linear, llama3,
// dynamic (NTK-aware: the base grows with the sequence once it passes
// max_position_embeddings) and yarn (interpolated and extrapolated
// frequencies blended along a ramp between the beta_fast and beta_slow
// rotation counts, cos and sin scaled by an attention factor).
#pragma once

#include <optional>

#include "lumen/core/graph.h"
#include "lumen/models/llama_config.h"

namespace lumen::models {

// [1, head_dim / 2]. `divisors`: llama.cpp's rope_freqs table (GGUF), applied
// first. `length`: how many positions the sequence holds with this step's
// tokens (transformers' max(position_ids) + 1); only "dynamic" reads it.
Tensor rope_inverse_frequencies(Graph& g, const LlamaConfig& config, const std::optional<Tensor>& divisors,
                                const Expr& length);

// The factor cos and sin are multiplied by: YaRN's attention factor (given,
// or from factor, mscale and mscale_all_dim), 1 for the other types.
double rope_attention_factor(const RopeScaling& scaling);

}  // namespace lumen::models
