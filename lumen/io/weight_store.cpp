#include "lumen/io/weight_store.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "lumen/core/error.h"
#include "lumen/core/tensor.h"
#include "lumen/io/safetensors.h"
#include "lumen/ops/movement.h"

namespace lumen::io {

namespace {

Shape concrete(const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims) s.push_back(Expr(d));
  return s;
}

void add_file(WeightStore& store, const std::string& path) {
  SafetensorsFile f = SafetensorsFile::open(path);
  for (const SafetensorsEntry& e : f.entries()) {
    StoredWeight w;
    w.shape = e.shape;
    w.data = f.get(e.name);
    w.source = e.name;
    store.add(e.name, std::move(w));
  }
}

// A 64-bit weight in the dtype the model declares it with; an integer that
// does not fit is an error, never a silently narrowed value.
Array converted(const Array& from, DType dtype, const std::string& name) {
  Array out(dtype, from.shape());
  for (int64_t i = 0; i < from.numel(); ++i) {
    Scalar v = from.load(i);
    if (v.integral && !is_float(dtype) && convert_to(dtype, v).i != v.i) {
      fail("weights: '", name, "' holds ", v.i, " at element ", i, ", outside the ", dtype_name(dtype),
           " range the model reads it as");
    }
    out.store(i, v);
  }
  return out;
}

}  // namespace

std::shared_ptr<WeightStore> WeightStore::from_safetensors(const std::string& path) {
  namespace fs = std::filesystem;
  auto store = std::make_shared<WeightStore>();
  store->origin = path;
  if (!fs::is_directory(path)) {
    add_file(*store, path);
    return store;
  }
  fs::path dir(path);
  if (fs::exists(dir / "model.safetensors")) {
    add_file(*store, (dir / "model.safetensors").string());
    return store;
  }
  fs::path index = dir / "model.safetensors.index.json";
  if (!fs::exists(index)) fail("weights: '", path, "' holds neither model.safetensors nor model.safetensors.index.json");
  nlohmann::json j;
  try {
    std::ifstream in(index);
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("weights: '", index.string(), "' is not valid JSON (", e.what(), ")");
  }
  if (!j.contains("weight_map") || !j["weight_map"].is_object()) fail("weights: '", index.string(), "' has no weight_map");
  std::set<std::string> shards;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) fail("weights: '", index.string(), "': weight_map['", name, "'] is not a file name");
    std::string shard = file.get<std::string>();
    if (shard.find('/') != std::string::npos || shard.find("..") != std::string::npos) {
      fail("weights: '", index.string(), "' names shard '", shard, "' outside its directory");
    }
    shards.insert(shard);
  }
  for (const std::string& s : shards) add_file(*store, (dir / s).string());
  return store;
}

void WeightStore::add(const std::string& name, StoredWeight weight) { weights_[name] = std::move(weight); }

const StoredWeight& WeightStore::weight(const std::string& name) const {
  auto it = weights_.find(name);
  if (it == weights_.end()) {
    fail("weights: '", origin, "' has no weight '", name, "' (", weights_.size(),
         " weights; is the config right for this file?)");
  }
  return it->second;
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  for (const auto& [n, w] : weights_) out.push_back(n);
  return out;
}

int64_t WeightStore::stored_bytes() const {
  int64_t total = 0;
  for (const auto& [n, w] : weights_) {
    for (const Array* a : {&w.data, &w.scales, &w.mins, &w.high}) {
      if (a->defined()) total += static_cast<int64_t>(a->nbytes());
    }
  }
  return total;
}

Tensor WeightStore::declare(Graph& g, const std::string& name, const Shape& shape, DType dtype) {
  const StoredWeight& w = weight(name);
  Shape stored = concrete(w.shape);
  bool same = stored.size() == shape.size();
  for (size_t d = 0; same && d < shape.size(); ++d) same = shape[d].is_const() && shape[d].value() == w.shape[d];
  if (!same) {
    fail("weights: '", name, "' is ", shape_string(w.shape), " in '", origin, "' but the model expects ", to_string(shape),
         " (does the config match the weights?)");
  }
  if (w.format != WeightFormat::Plain) {
    inputs_[name + ".q"] = w.data;
    inputs_[name + ".scales"] = w.scales;
    if (w.mins.defined()) inputs_[name + ".mins"] = w.mins;
    if (w.high.defined()) inputs_[name + ".qh"] = w.high;
    return dequantize(g, name, w, dtype);
  }
  if (is_wide(w.data.dtype()) && w.data.dtype() != dtype) {  // converted once here, not in every kernel that reads it
    inputs_[name] = converted(w.data, dtype, name);
    return g.parameter(name, shape, dtype);
  }
  inputs_[name] = w.data;
  Tensor t = g.parameter(name, shape, w.data.dtype());
  return w.data.dtype() == dtype ? t : t.cast(dtype);
}

namespace {

// A weight stored two quants a byte, dequantized, as f32 [.., K]: byte j of each
// group of `half` bytes holds the group's element j (low nibble) and element
// half + j (high nibble). The byte is split with integer ops only — low =
// q % 16, high·16 = q - low — and the high half is scaled by 1/16, a constant
// once a kernel's reduction lanes span the group (schedule_space's lane period
// makes the half a constant in each vector).
Tensor packed_dequantize(Graph& g, const std::string& name, const StoredWeight& w, const Shape& lead,
                         const std::function<Tensor(const std::string&, const Array&)>& per_block) {
  const int64_t half = w.packed_half, cols = w.shape.back();
  if (cols % (2 * half) != 0 || (half != w.block && 2 * half != w.block)) {
    fail("weights: packed '", name, "' has ", cols, " columns in groups of ", 2 * half, " and scales per ", w.block,
         " (internal error)");
  }
  const int64_t groups = cols / (2 * half);
  Shape packed = lead, grouped = lead, group_scales = lead, flat = lead;
  packed.push_back(Expr(cols / 2));
  flat.push_back(Expr(cols));
  for (int64_t e : {groups, int64_t{1}, half}) grouped.push_back(Expr(e));
  // One scale per group (Q4_0, Q4_1: broadcast over both halves) or per half (Q4_K).
  for (int64_t e : {groups, half == w.block ? int64_t{2} : int64_t{1}, int64_t{1}}) group_scales.push_back(Expr(e));
  const int h_axis = static_cast<int>(grouped.size()) - 2;
  Tensor bytes = g.parameter(name + ".q", packed, DType::U8).reshape(grouped).cast(DType::I32);
  Tensor low = bytes.mod(bytes.scalar(16));
  Tensor high = bytes.add(low.mul(low.scalar(-1)));  // 16 * the high nibble
  if (w.format == WeightFormat::Q4_0) {  // quants are q - 8
    low = low.add(low.scalar(-8));
    high = high.add(high.scalar(-128));
  }
  Tensor values = ops::concat({low, high}, h_axis).cast(DType::F32);  // [.., groups, 2, half]
  Shape two(grouped.size(), Expr(1));
  two[static_cast<size_t>(h_axis)] = Expr(2);
  Tensor h = g.iota(loop_index(two, static_cast<size_t>(h_axis)), two, DType::I32).cast(DType::F32);
  Tensor factor = h.scalar(1).add(h.mul(h.scalar(1.0 / 16 - 1)));  // 1 for the low half, 1/16 for the high one
  // The factor multiplies the values, not the scales: a product of parameters alone would be
  // materialised by fusion (an f32 buffer per block, read again: more bytes than the f16 scales).
  Tensor out = (values * factor) * per_block(".scales", w.scales).reshape(group_scales);
  if (w.mins.defined()) out = out + per_block(".mins", w.mins).reshape(group_scales);
  return out.reshape(flat);
}

// Q6_K (WeightFormat::Q6_K), as f32 [.., K]. Row element 128 G + 32 c + 16 j + i (quarter c = 2h + s)
// is computed at [.., G, h, s, j, i] — the row's own order, so a product reads the result as a plain
// [N, K] — from nibble h of low byte s K/4 + 32 G + 16 j + i and bit pair c of pair byte 32 G + 16 j + i,
// views of the parameters.
Tensor six_bit_dequantize(Graph& g, const std::string& name, const StoredWeight& w, const Shape& lead) {
  const int64_t cols = w.shape.back(), quarter = cols / 4, groups = cols / 128;
  if (cols % 128 != 0 || w.block != 16 || !w.high.defined()) {
    fail("weights: Q6_K '", name, "' has ", cols,
         " columns (a multiple of 256 with a scale every 16 and its bit pairs expected)");
  }
  auto with = [&](std::initializer_list<int64_t> tail) {
    Shape s = lead;
    for (int64_t e : tail) s.push_back(Expr(e));
    return s;
  };
  const int at = static_cast<int>(lead.size());
  std::vector<int> lead_dims;  // kept in place by the permutations below
  for (int d = 0; d < at; ++d) lead_dims.push_back(d);
  const Shape hs(lead.size() + 5, Expr(1));
  Shape h_shape = hs, s_shape = hs;
  h_shape[static_cast<size_t>(at + 1)] = Expr(2);
  s_shape[static_cast<size_t>(at + 2)] = Expr(2);
  Tensor h = g.iota(loop_index(h_shape, static_cast<size_t>(at + 1)), h_shape, DType::I32).cast(DType::F32);
  Tensor s = g.iota(loop_index(s_shape, static_cast<size_t>(at + 2)), s_shape, DType::I32).cast(DType::F32);
  std::vector<int> swap = lead_dims;  // [.., s, G, l] -> [.., G, s, l]
  swap.insert(swap.end(), {at + 1, at, at + 2});
  // floor(b · 16^-h) % 16 and floor(b · 4^-c) % 4 with 4^c = (1 + 3s)(1 + 15h): powers of two, so the
  // scalings are exact, and every factor is non-negative, so the remainders are masks in SIMD lanes.
  Tensor per_h = h.mul(h.scalar(15)).add(h.scalar(1));
  Tensor per_s = s.mul(s.scalar(3)).add(s.scalar(1));
  Tensor low = g.parameter(name + ".q", with({cols / 2}), DType::U8)
                   .reshape(with({2, groups, 32}))
                   .permute(swap)
                   .reshape(with({groups, 1, 2, 2, 16}))
                   .cast(DType::F32);
  Tensor shifted_low = low.mul(per_h.recip()).cast(DType::I32);
  Tensor nibble = shifted_low.mod(shifted_low.scalar(16)).cast(DType::F32);  // nibble h
  Tensor pairs =
      g.parameter(name + ".qh", with({quarter}), DType::U8).reshape(with({groups, 1, 1, 2, 16})).cast(DType::F32);
  Tensor shifted = pairs.mul(per_s.mul(per_h).recip()).cast(DType::I32);
  Tensor pair = shifted.mod(shifted.scalar(4)).cast(DType::F32);  // bit pair c
  Tensor q = nibble.add(pair.mul(pair.scalar(16))).add(pair.scalar(-32));  // [.., G, 2, 2, 2, 16]
  Tensor scales = g.parameter(name + ".scales", with({cols / 16}), w.scales.dtype());
  if (w.scales.dtype() != DType::F32) scales = scales.cast(DType::F32);
  std::vector<int> to_groups = lead_dims;  // [.., h, s, G, j] -> [.., G, h, s, j]
  to_groups.insert(to_groups.end(), {at + 2, at, at + 1, at + 3});
  scales = scales.reshape(with({2, 2, groups, 2})).permute(to_groups).reshape(with({groups, 2, 2, 2, 1}));
  return (q * scales).reshape(with({cols}));
}

}  // namespace

Tensor dequantize(Graph& g, const std::string& name, const StoredWeight& w, DType dtype) {
  const int64_t block = w.block;
  if (w.shape.empty() || block <= 0 || w.shape.back() % block != 0) {
    fail("weights: quantized '", name, "' has shape ", shape_string(w.shape), "; its last dim must be a multiple of ",
         block);
  }
  const bool with_min = w.format == WeightFormat::Q4_1 || w.format == WeightFormat::Q5_1 ||
                        w.format == WeightFormat::Q4_K || w.format == WeightFormat::Q5_K;
  if (!w.scales.defined() || (with_min && !w.mins.defined())) {
    fail("weights: quantized '", name, "' lacks its ", with_min ? "scales or mins" : "scales");
  }
  Shape lead;
  for (size_t d = 0; d + 1 < w.shape.size(); ++d) lead.push_back(Expr(w.shape[d]));
  int64_t blocks = w.shape.back() / block;
  Shape block_shape = lead, flat_shape = lead, scale_shape = lead;
  block_shape.push_back(Expr(blocks));
  block_shape.push_back(Expr(block));
  flat_shape.push_back(Expr(w.shape.back()));
  scale_shape.push_back(Expr(blocks));
  Shape per_block = scale_shape;  // broadcast over the elements of a block
  per_block.push_back(Expr(1));
  auto per_block_input = [&](const std::string& suffix, const Array& a) {
    Tensor t = g.parameter(name + suffix, scale_shape, a.dtype());
    return (a.dtype() == DType::F32 ? t : t.cast(DType::F32)).reshape(per_block);
  };
  if (w.format == WeightFormat::Q6_K) {
    Tensor out = six_bit_dequantize(g, name, w, lead);
    return dtype == DType::F32 ? out : out.cast(dtype);
  }
  if (w.packed_half > 0) {
    Tensor out = packed_dequantize(g, name, w, lead, [&](const std::string& suffix, const Array& a) {
      Tensor t = g.parameter(name + suffix, scale_shape, a.dtype());
      return a.dtype() == DType::F32 ? t : t.cast(DType::F32);
    });
    return dtype == DType::F32 ? out : out.cast(dtype);
  }
  Tensor scales = per_block_input(".scales", w.scales);
  Tensor values;  // [.., blocks, block] f32, the quants with their bias removed
  switch (w.format) {
    case WeightFormat::Q8_0:
    case WeightFormat::Q5_0:  // unpacked to i8 q - 16 at load
      values = g.parameter(name + ".q", flat_shape, DType::I8).cast(DType::F32).reshape(block_shape);
      break;
    case WeightFormat::Q5_1:  // unpacked to u8 at load
    case WeightFormat::Q5_K:
      values = g.parameter(name + ".q", flat_shape, DType::U8).cast(DType::F32).reshape(block_shape);
      break;
    case WeightFormat::Plain: fail("weights: dequantize('", name, "') on a plain weight");
    default: fail("weights: quantized '", name, "' (4-bit) is not packed two a byte (internal error)");
  }
  Tensor out = values * scales;
  if (with_min) out = out + per_block_input(".mins", w.mins);
  out = out.reshape(flat_shape);
  return dtype == DType::F32 ? out : out.cast(dtype);
}

}  // namespace lumen::io
