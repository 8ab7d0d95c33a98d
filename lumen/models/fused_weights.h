// Fused projections as some checkpoints store them, split into the separate
// parameters the Llama model declares: Phi-3's self_attn.qkv_proj holds the
// q, k and v rows one after another, and mlp.gate_up_proj the gate rows, then
// the up rows (llama.cpp's phi3 GGUF keeps the same fusions as attn_qkv and
// ffn_up). Splitting rows keeps quantized blocks whole: they run along a row.
#pragma once

#include <memory>
#include <string>

#include "lumen/io/weight_store.h"
#include "lumen/models/llama_config.h"

namespace lumen::models {

// `weights` with every fused projection replaced by its parts (the same store
// when there is none); a fused tensor of the wrong size is an error naming it.
std::shared_ptr<io::WeightStore> split_fused_weights(std::shared_ptr<io::WeightStore> weights, const LlamaConfig& config);

// A model directory's safetensors weights, fused projections split.
std::shared_ptr<io::WeightStore> llama_weights_from_directory(const std::string& dir, const LlamaConfig& config);

}  // namespace lumen::models
