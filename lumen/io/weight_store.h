// WeightStore — named weights from files, handed to a model as it is built.
//
// It is the ParameterSource a loader installs: each parameter the model
// declares is looked up by name (after the store's name mapping), its shape
// checked, and an input declared in the weight's stored form. f16/bf16 weights
// stay half precision in memory and are cast inside the consuming kernel;
// quantized GGUF blocks (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) stay
// quantized and are dequantized there.
// After building, `inputs()` holds the arrays to set on the compiled program.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lumen/core/array.h"
#include "lumen/nn/parameter_source.h"

namespace lumen::io {

// How a stored weight is laid out.
enum class WeightFormat {
  Plain,  // an array of the tensor's shape (f32, f16, bf16, ...)
  // Blocks of 32 along the last dim, each with an f16 scale d ([.., K/32]):
  Q8_0,  // i8 values [.., K]: x = q * d
  Q4_0,  // the file's nibbles, two a byte (see `packed_half`) [.., K/2]: x = (q - 8) * d
  Q4_1,  // the file's nibbles [.., K/2], f16 mins m [.., K/32]: x = q * d + m
  Q5_0,  // the five-bit quants unpacked at load to i8 q - 16 [.., K]: x = q * d (Q8_0's form)
  Q5_1,  // the five-bit quants unpacked at load to u8 q [.., K], f16 mins: x = q * d + m
  // k-quants (ggml_kquants.h), sub-block scales decoded at load to f32:
  Q4_K,  // the file's nibbles [.., K/2], f32 scales and mins [.., K/32]: x = q * d + m (Q4_1's form)
  Q5_K,  // as Q4_K with five-bit quants
  // Q6_K: six-bit quants q, x = (q - 32) * d with an f32 scale d per 16 elements, kept as the file packs
  // them with each row's bytes regrouped by quarter (ggml_kquants.h split_q6_k): the row's elements
  // 128 G + 32 c + l (G < K/128, quarter c < 4, l < 32) are quarter c's element m = 32 G + l, whose
  // low four bits are nibble c / 2 of byte (c % 2) K/4 + m of `data` [.., K/2], whose high two bits
  // are bits 2c, 2c + 1 of byte m of `high` [.., K/4], and whose scale is c K/64 + m / 16 of
  // `scales` [.., K/16]. A quarter is then a plain run of bytes (the int8 dot products' chains).
  Q6_K,
};

struct StoredWeight {
  WeightFormat format = WeightFormat::Plain;
  std::vector<int64_t> shape;  // the logical shape
  Array data;                  // Plain: the values; quantized: the packed values
  Array scales;                // quantized: f16 [.., K/block] (k-quants: f32)
  Array mins;                  // Q4_1, Q5_1, Q4_K, Q5_K: [.., K/block], the scales' dtype; else undefined
  std::string source;          // the name in the file, for messages
  int64_t block = 32;          // elements per scale (Q6_K: 16)
  // 4-bit quants kept two a byte as ggml stores them: in each group of
  // 2 * packed_half elements along the last dim, byte j holds element j in its
  // low nibble and element packed_half + j in its high one (Q4_0, Q4_1: 16;
  // Q4_K: 32). 0: a byte a quant. Kernels read a byte for two weights.
  int64_t packed_half = 0;
  Array high;                  // Q6_K: the quants' high bit pairs, four a byte [.., K/4]; else undefined
};

class WeightStore : public nn::ParameterSource {
 public:
  WeightStore() = default;
  // A safetensors file, or a directory holding model.safetensors (or the
  // shards listed in model.safetensors.index.json).
  static std::shared_ptr<WeightStore> from_safetensors(const std::string& path);

  void add(const std::string& name, StoredWeight weight);
  bool contains(const std::string& name) const { return weights_.count(name) > 0; }
  const StoredWeight& weight(const std::string& name) const;
  std::vector<std::string> names() const;
  // A short description of where the weights came from (for messages).
  std::string origin;

  Tensor declare(Graph& g, const std::string& name, const Shape& shape, DType dtype) override;
  // The arrays behind the inputs declare() created, by input name.
  const std::map<std::string, Array>& inputs() const { return inputs_; }
  // Bytes the stored weights occupy (mapped or owned).
  int64_t stored_bytes() const;

 private:
  std::map<std::string, StoredWeight> weights_;
  std::map<std::string, Array> inputs_;
};

// The dequantized weight, as a graph expression over its packed inputs
// `name`.q (i8 or u8; two nibbles a byte where packed_half > 0 and for Q6_K),
// `name`.scales, for the formats with mins `name`.mins, and for Q6_K `name`.qh:
// element [.., k] is as WeightFormat states, with d = scale[.., k / block].
Tensor dequantize(Graph& g, const std::string& name, const StoredWeight& w, DType dtype);

}  // namespace lumen::io
