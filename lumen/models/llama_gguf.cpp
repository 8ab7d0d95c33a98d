#include "lumen/models/llama_gguf.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <regex>

#include "lumen/core/error.h"
#include "lumen/models/fused_weights.h"

namespace lumen::models {

namespace {

// GGUF tensor name -> Hugging Face parameter name (phi3's fused projections
// keep their fused Hugging Face names; fused_weights.h splits them).
std::string hf_name(const std::string& gguf, const std::string& arch) {
  static const std::pair<const char*, const char*> top[] = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  for (const auto& [g, h] : top) {
    if (gguf == g) return h;
  }
  static const std::regex block(R"(blk\.(\d+)\.(\w+)\.(weight|bias))");
  static const std::pair<const char*, const char*> parts[] = {
      {"attn_norm", "input_layernorm"},   {"ffn_norm", "post_attention_layernorm"}, {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},     {"attn_v", "self_attn.v_proj"},           {"attn_output", "self_attn.o_proj"},
      {"ffn_gate", "mlp.gate_proj"},      {"ffn_up", "mlp.up_proj"},                {"ffn_down", "mlp.down_proj"},
      {"attn_q_norm", "self_attn.q_norm"}, {"attn_k_norm", "self_attn.k_norm"},
  };
  std::smatch m;
  if (std::regex_match(gguf, m, block)) {
    if (m[2] == "attn_qkv") return "model.layers." + m[1].str() + ".self_attn.qkv_proj." + m[3].str();
    if (arch == "phi3" && m[2] == "ffn_up") return "model.layers." + m[1].str() + ".mlp.gate_up_proj." + m[3].str();
    if (arch == "gemma2") {  // llama.cpp's names for Gemma-2's four norms
      static const std::pair<const char*, const char*> norms[] = {{"post_attention_norm", "post_attention_layernorm"},
                                                                  {"ffn_norm", "pre_feedforward_layernorm"},
                                                                  {"post_ffw_norm", "post_feedforward_layernorm"}};
      for (const auto& [g, h] : norms) {
        if (m[2] == g) return "model.layers." + m[1].str() + "." + h + "." + m[3].str();
      }
    }
    for (const auto& [g, h] : parts) {
      if (m[2] == g) return "model.layers." + m[1].str() + "." + h + "." + m[3].str();
    }
  }
  return "";  // not a parameter lumen's model uses
}

// Row r of the llama.cpp layout holds row source(r) of the Hugging Face one:
// within each head, rows (i, j) with i < d/2, j < 2 are stored at 2i + j.
int64_t hf_row(int64_t gguf_row, int64_t head_dim) {
  int64_t head = gguf_row / head_dim, within = gguf_row % head_dim;
  return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

// Copies rows of `bytes_per_row` bytes, placing gguf row r at hf_row(r).
void unpermute_rows(const unsigned char* src, unsigned char* dst, int64_t rows, size_t bytes_per_row, int64_t head_dim) {
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + static_cast<size_t>(hf_row(r, head_dim)) * bytes_per_row, src + static_cast<size_t>(r) * bytes_per_row,
                bytes_per_row);
  }
}

io::StoredWeight load_tensor(const io::GgufFile& f, const io::GgufTensor& t, bool unpermute, int64_t head_dim) {
  io::StoredWeight w;
  w.shape = t.shape;
  w.source = t.name;
  int64_t cols = t.shape.size() == 1 ? 1 : t.shape.back();  // a bias is one column of rows
  int64_t rows = t.shape.size() == 1 ? t.shape[0] : 1;
  for (size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= t.shape[d];
  if (unpermute && (t.shape.size() > 2 || rows % head_dim != 0)) {
    fail("gguf '", f.path(), "': tensor '", t.name, "' of shape ", shape_string(t.shape), " cannot hold heads of ", head_dim);
  }
  const io::GgmlBlockFormat& format = f.readable_format(t);
  if (format.plain) {
    Array a = f.get(t.name);
    if (unpermute) {
      Array copy(a.dtype(), a.shape());
      unpermute_rows(static_cast<const unsigned char*>(a.data()), static_cast<unsigned char*>(copy.data()), rows,
                     static_cast<size_t>(cols) * dtype_size(a.dtype()), head_dim);
      a = copy;
    }
    w.data = a;
    return w;
  }
  // Quantized blocks along each row: split into values, f16 scales (and mins).
  std::function<int64_t(int64_t)> row_to;
  if (unpermute) row_to = [head_dim](int64_t r) { return hf_row(r, head_dim); };
  io::StoredWeight q = io::unpack_ggml_blocks(t.type, f.data(t), t.shape, row_to);
  q.source = t.name;
  return q;
}

// rope_freqs.weight holds llama.cpp's per-frequency rotary divisors (Llama 3
// rope scaling); all ones is plain rotary.
bool all_ones(const io::GgufFile& f, const std::string& name) {
  for (float v : f.get(name).to_floats()) {
    if (v != 1.0f) return false;
  }
  return true;
}

std::string arch_of(const io::GgufFile& f) {
  return f.has("general.architecture") ? f.at("general.architecture").as_string("general.architecture") : "";
}

// YaRN under llama.cpp's keys. llama.cpp multiplies its attn_factor (default
// 1) by 0.1 ln(factor) + 1 itself, so Hugging Face's attention factor is the product.
void read_yarn(const io::GgufFile& f, const std::string& arch, LlamaConfig& c) {
  auto number = [&](const std::string& key, double fallback) {
    return f.has(arch + "." + key) ? f.at(arch + "." + key).as_double(arch + "." + key) : fallback;
  };
  RopeScaling& s = c.rope_scaling;
  s.type = "yarn";
  s.factor = number("rope.scaling.factor", 0);
  s.original_max_position = static_cast<int64_t>(number("rope.scaling.original_context_length", static_cast<double>(c.max_position)));
  s.beta_fast = number("rope.scaling.yarn_beta_fast", 32);
  s.beta_slow = number("rope.scaling.yarn_beta_slow", 1);
  double mscale = s.factor > 1 ? 0.1 * std::log(s.factor) + 1.0 : 1.0;
  s.attention_factor = number("rope.scaling.attn_factor", 1.0) * mscale;
  if (!(s.factor >= 1) || s.original_max_position < 1 || !(s.beta_fast > 0 && s.beta_slow > 0)) {
    fail("gguf '", f.path(), "': yarn rope scaling needs ", arch, ".rope.scaling.factor >= 1, original_context_length >= 1 and "
         "positive yarn_beta_fast / yarn_beta_slow; got ", s.factor, ", ", s.original_max_position, ", ", s.beta_fast, ", ", s.beta_slow);
  }
}

}  // namespace

LlamaConfig llama_config_from_gguf(const io::GgufFile& f) {
  std::string arch = arch_of(f);
  if (arch != "llama" && arch != "mistral" && arch != "qwen2" && arch != "qwen3" && arch != "phi3" && arch != "gemma" &&
      arch != "gemma2") {
    fail("gguf '", f.path(), "': general.architecture '", escape_bytes(arch),
         "' is not a Llama-family decoder lumen computes (llama, mistral, qwen2, qwen3, phi3, gemma, gemma2)");
  }
  auto integer = [&](const std::string& key) { return f.at(arch + "." + key).as_int(arch + "." + key); };
  auto number = [&](const std::string& key) { return f.at(arch + "." + key).as_double(arch + "." + key); };
  LlamaConfig c;
  c.model_type = arch;
  c.origin = "gguf '" + f.path() + "'";
  c.gguf_keys = true;
  c.dim = integer("embedding_length");
  c.layers = integer("block_count");
  c.hidden = integer("feed_forward_length");
  c.heads = integer("attention.head_count");
  c.kv_heads = f.has(arch + ".attention.head_count_kv") ? integer("attention.head_count_kv") : c.heads;
  c.max_position = f.has(arch + ".context_length") ? integer("context_length") : 2048;
  c.head_dim = f.has(arch + ".attention.key_length") ? integer("attention.key_length") : (c.heads > 0 ? c.dim / c.heads : 0);
  c.norm_eps = number("attention.layer_norm_rms_epsilon");
  c.rope_theta = f.has(arch + ".rope.freq_base") ? number("rope.freq_base") : 10000.0;
  if (f.has(arch + ".rope.scaling.type")) {
    const std::string& t = f.at(arch + ".rope.scaling.type").as_string(arch + ".rope.scaling.type");
    if (t == "linear") {  // llama.cpp: positions times 1 / factor, as Hugging Face's frequencies divided by it
      c.rope_scaling.type = "linear";
      c.rope_scaling.factor = number("rope.scaling.factor");
    } else if (t == "yarn") {
      read_yarn(f, arch, c);
    } else if (t != "none") {
      fail("gguf '", f.path(), "': rope scaling '", escape_bytes(t),
           "' is not supported (none, linear, yarn; Llama 3's comes as rope_freqs)");
    }
  }
  if (arch == "gemma" || arch == "gemma2") {  // llama.cpp's converter stores Gemma's norm weights as 1 + w: a plain RMSNorm here
    c.activation = "gelu_tanh";
    c.scale_embeddings = true;
  }
  if (arch == "gemma2") {
    c.sandwich_norms = true;
    c.attn_softcap = f.has(arch + ".attn_logit_softcapping") ? number("attn_logit_softcapping") : 0;
    c.final_softcap = f.has(arch + ".final_logit_softcapping") ? number("final_logit_softcapping") : 0;
    // llama.cpp scales by 1/sqrt(head_dim), except for the 27B (46 layers: its query_pre_attn_scalar is
    // dim / heads); attention.scale, when written (lumen's export does for other scalars), wins.
    if (c.layers == 46) c.attention_scale = 1.0 / std::sqrt(static_cast<double>(c.dim) / static_cast<double>(c.heads));
    if (f.has(arch + ".attention.scale")) c.attention_scale = number("attention.scale");
  }
  if (f.has(arch + ".attention.sliding_window")) {
    // llama.cpp's phi3 windows every layer (its converter writes the context length when the model has no window),
    // gemma2 every other layer from the first.
    if (arch != "phi3" && arch != "gemma2") {
      fail("gguf '", f.path(), "': ", arch, ".attention.sliding_window is set; lumen reads sliding-window attention from "
           "GGUF for phi3 and gemma2 only (use the model directory)");
    }
    c.sliding_window = integer("attention.sliding_window");
    for (int64_t i = 0; arch == "gemma2" && i < c.layers; ++i) c.window_layers.push_back(i % 2 == 0);
  }
  const io::GgufTensor& embed = f.tensor("token_embd.weight");
  if (embed.shape.size() != 2) fail("gguf '", f.path(), "': token_embd.weight has shape ", shape_string(embed.shape), " (expected [vocab, dim])");
  c.vocab = embed.shape[0];
  // Which optional parameters exist is read from the tensors (as llama.cpp does).
  auto has_tensor = [&](const std::string& name) {
    for (const io::GgufTensor& t : f.tensors()) {
      if (t.name == name) return true;
    }
    return false;
  };
  c.tie_embeddings = !has_tensor("output.weight");
  c.rope_freq_factors = has_tensor("rope_freqs.weight") && !all_ones(f, "rope_freqs.weight");
  c.qkv_bias = has_tensor("blk.0.attn_q.bias");
  c.out_bias = has_tensor("blk.0.attn_output.bias");
  c.mlp_bias = has_tensor("blk.0.ffn_up.bias");
  c.qk_norm = arch == "qwen3";  // as llama.cpp: another architecture's stray attn_q_norm is not a parameter
  if (f.has("tokenizer.ggml.bos_token_id")) c.bos_token = f.at("tokenizer.ggml.bos_token_id").as_int("tokenizer.ggml.bos_token_id");
  // llama.cpp ends generation at eos, end-of-turn and end-of-message tokens.
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (!f.has(key)) continue;
    int64_t id = f.at(key).as_int(key);
    if (!c.is_eos(id)) c.eos_tokens.push_back(id);
  }
  c.validate();
  return c;
}

std::shared_ptr<io::WeightStore> llama_weights_from_gguf(const io::GgufFile& f, const LlamaConfig& c) {
  auto store = std::make_shared<io::WeightStore>();
  store->origin = f.path();
  bool interleaved = arch_of(f) == "llama" || arch_of(f) == "mistral";
  for (const io::GgufTensor& t : f.tensors()) {
    if (t.name == "rope_freqs.weight") {
      if (t.shape != std::vector<int64_t>{c.head_dim / 2}) {
        fail("gguf '", f.path(), "': rope_freqs.weight has shape ", shape_string(t.shape), "; rotary factors for head_dim ",
             c.head_dim, " are [", c.head_dim / 2, "]");
      }
      if (c.rope_freq_factors) store->add(t.name, load_tensor(f, t, false, c.head_dim));
      continue;
    }
    std::string name = hf_name(t.name, arch_of(f));
    if (name.empty()) {
      fail("gguf '", f.path(), "': tensor '", t.name, "' is not a parameter of a Llama-family decoder that lumen knows "
           "(the file holds a variant lumen does not compute)");
    }
    bool q = name.find("self_attn.q_proj") != std::string::npos, k = name.find("self_attn.k_proj") != std::string::npos;
    store->add(name, load_tensor(f, t, interleaved && (q || k), c.head_dim));
  }
  return split_fused_weights(store, c);
}

}  // namespace lumen::models
