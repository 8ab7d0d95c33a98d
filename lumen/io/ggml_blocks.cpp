#include "lumen/io/ggml_blocks.h"

#include <cstring>

#include "lumen/core/error.h"
#include "lumen/io/ggml_kquants.h"

namespace lumen::io {

namespace {

// clang-format off
//   type            name    bytes elems readable plain  d   m   qh  q   bits bias
const GgmlBlockFormat kFormats[] = {
  {GgmlType::F32,  "F32",    4,   1,  true,  true},
  {GgmlType::F16,  "F16",    2,   1,  true,  true},
  {GgmlType::BF16, "BF16",   2,   1,  true,  true},
  {GgmlType::Q8_0, "Q8_0",  34,  32,  true,  false, 0, -1, -1,  2, 8,  0},
  {GgmlType::Q4_0, "Q4_0",  18,  32,  true,  false, 0, -1, -1,  2, 4,  8},
  {GgmlType::Q4_1, "Q4_1",  20,  32,  true,  false, 0,  2, -1,  4, 4,  0},
  {GgmlType::Q5_0, "Q5_0",  22,  32,  true,  false, 0, -1,  2,  6, 5, 16},
  {GgmlType::Q5_1, "Q5_1",  24,  32,  true,  false, 0,  2,  4,  8, 5,  0},
  // k-quants: 256-element super-blocks (ggml_kquants.h reads their fields).
  {GgmlType::Q4_K, "Q4_K", 144, 256,  true,  false, -1, -1, -1, -1, 4,  0},
  {GgmlType::Q5_K, "Q5_K", 176, 256,  true,  false, -1, -1, -1, -1, 5,  0},
  {GgmlType::Q6_K, "Q6_K", 210, 256,  true,  false, -1, -1, -1, -1, 6, 32},
  {GgmlType::F64,  "F64",    8,   1,  true,  true},
  {GgmlType::I64,  "I64",    8,   1,  true,  true},
  // Known, sized, not yet loaded.
  {GgmlType::Q8_1, "Q8_1",  36,  32,  false, false},
  {GgmlType::Q2_K, "Q2_K",  84, 256,  false, false},
  {GgmlType::Q3_K, "Q3_K", 110, 256,  false, false},
  {GgmlType::Q8_K, "Q8_K", 292, 256,  false, false},
};
// clang-format on

uint32_t read_u32_le(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

// The 32 five-bit quants of a Q5 block, minus the format's bias, one byte
// each (Q5_0: i8 in -16..15, two's complement). The fifth bits come from a
// 32-bit word, bit j for element j: a kernel could take them only by a shift
// that differs per element, so Q5 is unpacked here. (4-bit types keep their
// bytes: the low and high nibbles are two digits a kernel splits with & 15.)
void expand_quants(const GgmlBlockFormat& f, const unsigned char* block, unsigned char* out) {
  uint32_t qh = f.value_bits == 5 ? read_u32_le(block + f.high_bits_offset) : 0;
  const unsigned char* q = block + f.values_offset;
  for (int j = 0; j < 16; ++j) {
    int low = (q[j] & 0x0f) | static_cast<int>((qh >> j) & 1u) << 4;
    int high = (q[j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    out[j] = static_cast<unsigned char>(low - f.value_bias);
    out[j + 16] = static_cast<unsigned char>(high - f.value_bias);
  }
}

WeightFormat weight_format(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return WeightFormat::Q8_0;
    case GgmlType::Q4_0: return WeightFormat::Q4_0;
    case GgmlType::Q4_1: return WeightFormat::Q4_1;
    case GgmlType::Q5_0: return WeightFormat::Q5_0;
    case GgmlType::Q5_1: return WeightFormat::Q5_1;
    case GgmlType::Q4_K: return WeightFormat::Q4_K;
    case GgmlType::Q5_K: return WeightFormat::Q5_K;
    case GgmlType::Q6_K: return WeightFormat::Q6_K;
    default: return WeightFormat::Plain;
  }
}

// k-quant super-blocks into per-sub-block f32 scales (and mins) and the quants
// (Q4_K: its nibbles as they are; Q5_K: a byte each; Q6_K: split_q6_k's rows).
StoredWeight unpack_k_quants(const GgmlBlockFormat& f, const unsigned char* src, const std::vector<int64_t>& shape,
                             int64_t rows, const std::function<int64_t(int64_t)>& row_to) {
  const bool q6 = f.type == GgmlType::Q6_K;
  const int64_t cols = shape.back(), supers = cols / kKQuantElements;
  const int64_t sub = q6 ? 16 : 32, per_super = kKQuantElements / sub;
  StoredWeight w;
  w.format = weight_format(f.type);
  w.shape = shape;
  w.block = sub;
  const bool packed = f.type == GgmlType::Q4_K;  // its 128 bytes of nibbles are kept as they are
  auto with_last = [&](int64_t last) {
    std::vector<int64_t> s(shape.begin(), shape.end() - 1);
    s.push_back(last);
    return s;
  };
  w.data = Array(DType::U8, with_last(packed || q6 ? cols / 2 : cols));
  if (packed) w.packed_half = 32;
  if (q6) w.high = Array(DType::U8, with_last(cols / 4));
  w.scales = Array(DType::F32, with_last(cols / sub));
  if (!q6) w.mins = Array(DType::F32, with_last(cols / sub));
  auto* values = static_cast<unsigned char*>(w.data.data());
  auto* high = q6 ? static_cast<unsigned char*>(w.high.data()) : nullptr;
  auto* scales = static_cast<float*>(w.scales.data());
  auto* mins = q6 ? nullptr : static_cast<float*>(w.mins.data());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t to = row_to ? row_to(r) : r;
    for (int64_t b = 0; b < supers; ++b) {
      const unsigned char* block = src + static_cast<size_t>(r * supers + b) * f.block_bytes;
      const size_t at = static_cast<size_t>((to * supers + b) * per_super);
      if (q6) {
        split_q6_k(block, b, cols, values + to * cols / 2, high + to * cols / 4, scales + to * supers * per_super);
      } else if (packed) {
        split_q4_k(block, values + static_cast<size_t>((to * cols + b * kKQuantElements) / 2), scales + at, mins + at);
      } else {
        unpack_q5_k(block, values + static_cast<size_t>(to * cols + b * kKQuantElements), scales + at, mins + at);
      }
    }
  }
  return w;
}

}  // namespace

const GgmlBlockFormat* ggml_block_format(uint32_t type) {
  for (const GgmlBlockFormat& f : kFormats) {
    if (static_cast<uint32_t>(f.type) == type) return &f;
  }
  return nullptr;
}

std::string ggml_type_label(uint32_t type) {
  const GgmlBlockFormat* f = ggml_block_format(type);
  return std::string(f ? f->name : "unknown") + " (" + std::to_string(type) + ")";
}

std::string ggml_readable_types() {
  std::vector<std::string> names;
  for (const GgmlBlockFormat& f : kFormats) {
    if (f.readable) names.push_back(f.name);
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

StoredWeight unpack_ggml_blocks(uint32_t type, const unsigned char* src, const std::vector<int64_t>& shape,
                                const std::function<int64_t(int64_t)>& row_to) {
  const GgmlBlockFormat* f = ggml_block_format(type);
  if (!f || !f->readable || f->plain) fail("unpack_ggml_blocks: type ", ggml_type_label(type), " is not a quantized type lumen reads");
  if (shape.empty() || shape.back() % f->block_elements != 0) {
    fail("unpack_ggml_blocks: a ", f->name, " tensor of shape ", shape_string(shape), " does not hold whole blocks of ",
         f->block_elements);
  }
  const int64_t cols = shape.back(), blocks = cols / f->block_elements;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  if (f->block_elements == kKQuantElements) return unpack_k_quants(*f, src, shape, rows, row_to);
  StoredWeight w;
  w.format = weight_format(f->type);
  w.shape = shape;
  std::vector<int64_t> per_block(shape.begin(), shape.end() - 1), values_shape = per_block;
  per_block.push_back(blocks);
  values_shape.push_back(cols);
  const bool packed = f->value_bits == 4;  // two nibbles a byte, as the file has them
  const bool signed_values = !packed && (f->value_bias > 0 || f->type == GgmlType::Q8_0);
  if (packed) {
    values_shape.back() = cols / 2;
    w.packed_half = f->block_elements / 2;
  }
  w.data = Array(signed_values ? DType::I8 : DType::U8, values_shape);
  w.scales = Array(DType::F16, per_block);
  if (f->min_offset >= 0) w.mins = Array(DType::F16, per_block);
  const auto value_bytes = static_cast<size_t>(packed ? f->block_elements / 2 : f->block_elements);
  auto* values = static_cast<unsigned char*>(w.data.data());
  auto* scales = static_cast<unsigned char*>(w.scales.data());
  auto* mins = f->min_offset >= 0 ? static_cast<unsigned char*>(w.mins.data()) : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t to = row_to ? row_to(r) : r;
    for (int64_t b = 0; b < blocks; ++b) {
      const unsigned char* block = src + static_cast<size_t>(r * blocks + b) * f->block_bytes;
      const size_t at = static_cast<size_t>(to * blocks + b);
      std::memcpy(scales + at * 2, block + f->scale_offset, 2);
      if (mins) std::memcpy(mins + at * 2, block + f->min_offset, 2);
      if (f->value_bits == 5) {
        expand_quants(*f, block, values + at * value_bytes);
      } else {
        std::memcpy(values + at * value_bytes, block + f->values_offset, value_bytes);
      }
    }
  }
  return w;
}

}  // namespace lumen::io
