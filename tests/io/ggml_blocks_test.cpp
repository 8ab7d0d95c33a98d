// ggml block formats: random blocks of every quantized type lumen reads,
// unpacked as the GGUF loader does and dequantized by the graph expression
// (alone and inside a matrix-vector product; 4-bit quants two a byte), on the
// interpreter, the CPU backend and OpenCL, against a
// dequantization written here from ggml's block definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "lumen/compile.h"
#include "lumen/core/error.h"
#include "lumen/core/tensor.h"
#include "lumen/io/ggml_blocks.h"

namespace lumen::io {
namespace {

uint16_t half_bits(double v) {
  Array a(DType::F16, {1});
  a.set(0, v);
  uint16_t bits;
  std::memcpy(&bits, a.data(), 2);
  return bits;
}

double half_value(const unsigned char* p) {
  Array a(DType::F16, {1});
  std::memcpy(a.data(), p, 2);
  return a.get(0);
}

// Random blocks: f16 scales and mins in a sane range, every quant byte random.
std::vector<unsigned char> random_blocks(const GgmlBlockFormat& f, int64_t blocks, std::mt19937& rng) {
  std::vector<unsigned char> out(static_cast<size_t>(blocks) * f.block_bytes);
  std::uniform_real_distribution<double> scale(-0.2, 0.2), min(-1.5, 1.5);
  for (auto& b : out) b = static_cast<unsigned char>(rng());
  for (int64_t b = 0; b < blocks; ++b) {
    unsigned char* block = out.data() + b * f.block_bytes;
    uint16_t d = half_bits(scale(rng));
    std::memcpy(block + f.scale_offset, &d, 2);
    if (f.min_offset >= 0) {
      uint16_t m = half_bits(min(rng));
      std::memcpy(block + f.min_offset, &m, 2);
    }
  }
  return out;
}

// Element j of one block, from ggml's definitions (block_q4_0 ... block_q8_0).
double reference(GgmlType type, const unsigned char* block, int j) {
  double d = half_value(block);
  switch (type) {
    case GgmlType::Q8_0: return static_cast<int8_t>(block[2 + j]) * d;
    case GgmlType::Q4_0: {
      int nibble = j < 16 ? block[2 + j] & 15 : block[2 + j - 16] >> 4;
      return (nibble - 8) * d;
    }
    case GgmlType::Q4_1: {
      int nibble = j < 16 ? block[4 + j] & 15 : block[4 + j - 16] >> 4;
      return nibble * d + half_value(block + 2);
    }
    case GgmlType::Q5_0: {
      uint32_t qh;
      std::memcpy(&qh, block + 2, 4);
      int nibble = j < 16 ? block[6 + j] & 15 : block[6 + j - 16] >> 4;
      return ((nibble | static_cast<int>((qh >> j) & 1) << 4) - 16) * d;
    }
    case GgmlType::Q5_1: {
      uint32_t qh;
      std::memcpy(&qh, block + 4, 4);
      int nibble = j < 16 ? block[8 + j] & 15 : block[8 + j - 16] >> 4;
      return (nibble | static_cast<int>((qh >> j) & 1) << 4) * d + half_value(block + 2);
    }
    default: ADD_FAILURE() << "no reference for type " << static_cast<int>(type); return 0;
  }
}

struct Case {
  Backend backend;
  GgmlType type;
};

class GgmlBlocksTest : public ::testing::TestWithParam<Case> {};

TEST_P(GgmlBlocksTest, DequantizedWeightAndMatvecMatchReference) {
  const GgmlBlockFormat& f = *ggml_block_format(static_cast<uint32_t>(GetParam().type));
  const int64_t rows = 7, cols = 96, blocks = cols / 32;
  std::mt19937 rng(static_cast<unsigned>(f.block_bytes) * 31u + 5u);
  std::vector<unsigned char> file = random_blocks(f, rows * blocks, rng);
  // Rows land reversed, as the loader places llama.cpp's interleaved q/k rows.
  StoredWeight w = unpack_ggml_blocks(static_cast<uint32_t>(f.type), file.data(), {rows, cols},
                                      [&](int64_t r) { return rows - 1 - r; });
  ASSERT_EQ(w.mins.defined(), f.min_offset >= 0);

  Graph g;
  Tensor weight = dequantize(g, "w", w, DType::F32);
  Tensor x = g.input("x", {Expr(cols)});
  g.mark_output(weight, "weight");
  g.mark_output(weight.matmul(x.reshape({Expr(cols), Expr(1)})).reshape({Expr(rows)}), "y");
  CompileOptions o;
  o.backend = GetParam().backend;
  o.tuning_cache = false;
  Program p = compile(g, {}, o);
  p.set("w.q", w.data);
  p.set("w.scales", w.scales);
  if (w.mins.defined()) p.set("w.mins", w.mins);
  Array xa(DType::F32, {cols});
  for (int64_t k = 0; k < cols; ++k) xa.set(k, std::cos(0.37 * static_cast<double>(k)));
  p.set("x", xa);
  p.run();
  const Array& got = p.get("weight");
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (int64_t k = 0; k < cols; ++k) {
      const unsigned char* block = file.data() + ((rows - 1 - r) * blocks + k / 32) * f.block_bytes;
      double want = reference(f.type, block, static_cast<int>(k % 32));
      ASSERT_NEAR(got.get(r * cols + k), want, 1e-6 * (1 + std::abs(want))) << f.name << " [" << r << ", " << k << "]";
      dot += want * xa.get(k);
    }
    EXPECT_NEAR(p.get("y").get(r), dot, 1e-4 * (1 + std::abs(dot))) << f.name << " row " << r;
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (Backend b : {Backend::Interp, Backend::Cpu, Backend::OpenCl}) {
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1}) out.push_back({b, t});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Types, GgmlBlocksTest, ::testing::ValuesIn(cases()), [](const auto& info) {
  return std::string(backend_name(info.param.backend)) + "_" + ggml_block_format(static_cast<uint32_t>(info.param.type))->name;
});

TEST(GgmlBlocks, TableSizesAndNames) {
  // Block sizes as ggml defines them (sizeof(block_q4_1) == 20, ...).
  EXPECT_EQ(ggml_block_format(3)->block_bytes, 20u);
  EXPECT_EQ(ggml_block_format(6)->block_bytes, 22u);
  EXPECT_EQ(ggml_block_format(7)->block_bytes, 24u);
  EXPECT_EQ(ggml_block_format(12)->block_bytes, 144u);
  EXPECT_TRUE(ggml_block_format(12)->readable);
  EXPECT_EQ(ggml_block_format(14)->block_bytes, 210u);
  EXPECT_FALSE(ggml_block_format(10)->readable);
  EXPECT_EQ(ggml_block_format(99), nullptr);
  EXPECT_EQ(ggml_type_label(14), "Q6_K (14)");
  EXPECT_EQ(ggml_type_label(99), "unknown (99)");
  EXPECT_EQ(ggml_readable_types(), "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, F64 and I64");
  EXPECT_THROW(unpack_ggml_blocks(10, nullptr, {2, 256}), Error);
  EXPECT_THROW(unpack_ggml_blocks(12, nullptr, {2, 128}), Error);  // not whole super-blocks
  EXPECT_THROW(unpack_ggml_blocks(3, nullptr, {2, 33}), Error);
}

}  // namespace
}  // namespace lumen::io
