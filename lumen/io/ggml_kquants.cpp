#include "lumen/io/ggml_kquants.h"

#include <cstring>

#include "lumen/core/dtype.h"

namespace lumen::io {

namespace {

float read_f16(const unsigned char* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return half_to_float(bits);
}

// Sub-block j's 6-bit scale and min of a Q4_K / Q5_K super-block: the first
// four in the low six bits of bytes j and j + 4; the last four split between
// the nibbles of bytes j + 4 and the top two bits of bytes j - 4 and j.
void scale_and_min(const unsigned char* packed, int j, int& scale, int& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = (packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4);
    min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

// The 8 sub-block scales d*sc and mins -dmin*m of a Q4_K / Q5_K super-block.
void scales_and_mins(const unsigned char* block, float* scales, float* mins) {
  const float d = read_f16(block), dmin = read_f16(block + 2);
  const unsigned char* packed = block + 4;
  for (int j = 0; j < 8; ++j) {
    int scale = 0, min = 0;
    scale_and_min(packed, j, scale, min);
    scales[j] = d * static_cast<float>(scale);
    mins[j] = -dmin * static_cast<float>(min);
  }
}

// Q5_K's quants: the nibbles with their fifth bits from `high`.
void unpack_q5_k_quants(const unsigned char* block, const unsigned char* high, const unsigned char* nibbles,
                        unsigned char* quants, float* scales, float* mins) {
  scales_and_mins(block, scales, mins);
  // Each 64 elements: 32 bytes of nibbles, low nibbles first; fifth bits: bit
  // 2c of high[l] for element l of chunk c's first half, bit 2c + 1 for its second.
  for (int c = 0; c < 4; ++c) {
    const unsigned char* q = nibbles + 32 * c;
    for (int l = 0; l < 32; ++l) {
      int low = q[l] & 0x0f, top = q[l] >> 4;
      low |= ((high[l] >> (2 * c)) & 1) << 4;
      top |= ((high[l] >> (2 * c + 1)) & 1) << 4;
      quants[64 * c + l] = static_cast<unsigned char>(low);
      quants[64 * c + 32 + l] = static_cast<unsigned char>(top);
    }
  }
}

}  // namespace

void split_q4_k(const unsigned char* block, unsigned char* nibbles, float* scales, float* mins) {
  scales_and_mins(block, scales, mins);
  std::memcpy(nibbles, block + 16, kKQuantElements / 2);
}

void unpack_q5_k(const unsigned char* block, unsigned char* quants, float* scales, float* mins) {
  unpack_q5_k_quants(block, block + 16, block + 48, quants, scales, mins);
}

void split_q6_k(const unsigned char* block, int64_t b, int64_t k, unsigned char* low, unsigned char* pairs,
                float* scales) {
  const auto* sc = reinterpret_cast<const signed char*>(block + 192);  // 16 bytes
  const float d = read_f16(block + 208);
  const int64_t quarter = k / 4, scale_quarter = k / 64;
  for (int64_t half = 0; half < 2; ++half) {
    const int64_t m = 64 * b + 32 * half;  // the row position of this half's l = 0
    for (int64_t s = 0; s < 2; ++s) std::memcpy(low + s * quarter + m, block + 64 * half + 32 * s, 32);
    std::memcpy(pairs + m, block + 128 + 32 * half, 32);
    // element 32c + l of the half is in the file's sub-block of 16 number 8·half + 2c + l / 16
    for (int64_t c = 0; c < 4; ++c) {
      for (int64_t j = 0; j < 2; ++j) {
        scales[c * scale_quarter + m / 16 + j] = d * static_cast<float>(sc[8 * half + 2 * c + j]);
      }
    }
  }
}

}  // namespace lumen::io
