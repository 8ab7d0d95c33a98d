// ggml's tensor storage formats in one table: for each type id, its name, the
// bytes and elements of one block, and where each field of a block lies.
// gguf.cpp sizes tensors from it; the quantized-weight unpacker below splits
// blocks into the arrays lumen keeps in memory (see WeightFormat). The
// k-quants (Q4_K, ...) are listed with their sizes so a file holding them is
// indexed and named; `readable` says whether lumen can load their values.
//
// Element order within a block follows ggml: for the 4- and 5-bit types the
// low nibble of byte i is element i and its high nibble element i + 16; bit j
// of the 32-bit `qh` word is the fifth bit of element j.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lumen/io/weight_store.h"

namespace lumen::io {

// ggml type ids lumen names (the numbers are ggml's and GGUF's).
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15, I64 = 27, F64 = 28, BF16 = 30,
};

struct GgmlBlockFormat {
  GgmlType type;
  const char* name;
  uint32_t block_bytes;
  uint32_t block_elements;
  bool readable;         // lumen loads its values
  bool plain;            // one element per block (F32, F16, BF16): read as an Array
  int scale_offset = -1;      // f16 d
  int min_offset = -1;        // f16 m (x = q * d + m), or -1
  int high_bits_offset = -1;  // u32 qh (fifth bits), or -1
  int values_offset = -1;     // the packed quants
  int value_bits = 0;         // 4, 5 (nibble + qh bit) or 8
  int value_bias = 0;         // subtracted from q before scaling (Q4_0: 8, Q5_0: 16)
};

// The format of a type id, or nullptr when ggml has no such type lumen knows.
const GgmlBlockFormat* ggml_block_format(uint32_t type);
// "F32 (0)", "Q4_K (12)" or "unknown (99)".
std::string ggml_type_label(uint32_t type);
// The types lumen loads, for messages: "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1".
std::string ggml_readable_types();

// Splits the quantized blocks of a [rows, cols] tensor (`shape`'s last dim is
// cols; cols a multiple of the block) into the stored form WeightFormat
// describes. Row r of the file lands at row `row_to(r)` (a permutation; for
// llama.cpp's interleaved q/k heads), identity when null. `src` must hold
// rows * cols / block_elements * block_bytes bytes (the GGUF reader checks).
StoredWeight unpack_ggml_blocks(uint32_t type, const unsigned char* src, const std::vector<int64_t>& shape,
                                const std::function<int64_t(int64_t)>& row_to = nullptr);

}  // namespace lumen::io
