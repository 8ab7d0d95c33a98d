#include "lumen/models/fused_weights.h"

#include <cstring>
#include <vector>

#include "lumen/core/error.h"

namespace lumen::models {

namespace {

// Rows [begin, end) of an array whose first dim is the weight's rows (values, scales, mins).
Array rows_of(const Array& a, int64_t begin, int64_t end) {
  if (!a.defined() || a.shape().empty()) return a;
  std::vector<int64_t> shape = a.shape();
  size_t row_bytes = a.nbytes() / static_cast<size_t>(shape[0]);
  shape[0] = end - begin;
  Array out(a.dtype(), shape);
  std::memcpy(out.data(), static_cast<const unsigned char*>(a.data()) + static_cast<size_t>(begin) * row_bytes,
              static_cast<size_t>(end - begin) * row_bytes);
  return out;
}

io::StoredWeight rows_of(const io::StoredWeight& w, int64_t begin, int64_t end) {
  io::StoredWeight part = w;
  part.shape[0] = end - begin;
  part.data = rows_of(w.data, begin, end);
  part.scales = rows_of(w.scales, begin, end);
  part.mins = rows_of(w.mins, begin, end);
  part.high = rows_of(w.high, begin, end);
  return part;
}

struct Fusion {
  const char* fused;                   // "self_attn.qkv_proj"
  std::vector<const char*> parts;      // in row order
  std::vector<int64_t> rows;           // rows of each part
};

}  // namespace

std::shared_ptr<io::WeightStore> split_fused_weights(std::shared_ptr<io::WeightStore> weights, const LlamaConfig& c) {
  std::vector<Fusion> fusions = {
      {"self_attn.qkv_proj", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
       {c.heads * c.head_dim, c.kv_heads * c.head_dim, c.kv_heads * c.head_dim}},
      {"mlp.gate_up_proj", {"mlp.gate_proj", "mlp.up_proj"}, {c.hidden, c.hidden}},
  };
  auto split = std::make_shared<io::WeightStore>();
  split->origin = weights->origin;
  bool any = false;
  for (const std::string& name : weights->names()) {
    const io::StoredWeight& w = weights->weight(name);
    const Fusion* found = nullptr;
    std::string prefix, suffix;
    for (const Fusion& f : fusions) {
      size_t at = name.find(std::string(".") + f.fused + ".");
      if (at == std::string::npos) continue;
      found = &f;
      prefix = name.substr(0, at + 1);
      suffix = name.substr(at + 1 + std::strlen(f.fused));  // ".weight" or ".bias"
    }
    if (!found) {
      split->add(name, w);
      continue;
    }
    any = true;
    int64_t total = 0;
    for (int64_t r : found->rows) total += r;
    if (w.shape.empty() || w.shape[0] != total) {
      fail(weights->origin, ": '", w.source, "' has shape ", shape_string(w.shape), "; the fused ", found->fused, " of ",
           c.summary(), " has ", total, " rows");
    }
    int64_t begin = 0;
    for (size_t i = 0; i < found->parts.size(); ++i) {
      split->add(prefix + found->parts[i] + suffix, rows_of(w, begin, begin + found->rows[i]));
      begin += found->rows[i];
    }
  }
  return any ? split : weights;
}

std::shared_ptr<io::WeightStore> llama_weights_from_directory(const std::string& dir, const LlamaConfig& config) {
  return split_fused_weights(io::WeightStore::from_safetensors(dir), config);
}

}  // namespace lumen::models
