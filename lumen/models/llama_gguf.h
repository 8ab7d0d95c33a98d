// Llama-family models from GGUF files written for llama.cpp: the config from
// the llama.* / qwen2.* metadata and the weights mapped onto Hugging Face
// parameter names. Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 tensors stay quantized
// (repacked into values + scales (+ mins), see io::WeightFormat); f16/bf16 stay
// half precision. A file may mix types, as llama.cpp writes them.
//
// llama.cpp's converter interleaves the rows of q_proj and k_proj for the
// "llama" architecture (its rotary layout pairs neighbours); they are
// un-interleaved here so the model applies Hugging Face's rotate-half form.
#pragma once

#include <memory>
#include <string>

#include "lumen/io/gguf.h"
#include "lumen/io/weight_store.h"
#include "lumen/models/llama.h"

namespace lumen::models {

LlamaConfig llama_config_from_gguf(const io::GgufFile& file);
std::shared_ptr<io::WeightStore> llama_weights_from_gguf(const io::GgufFile& file, const LlamaConfig& config);

}  // namespace lumen::models
