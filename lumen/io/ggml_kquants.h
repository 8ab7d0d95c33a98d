// ggml's k-quants (Q4_K, Q5_K, Q6_K): 256-element super-blocks whose
// sub-blocks carry their own scales, packed in 6 or 8 bits under one or two
// f16 super-block factors. At load each super-block becomes the forms lumen
// keeps (WeightFormat): per sub-block, an f32 scale (and min) with the
// super-block factor already applied, and the quants — Q4_K's nibbles as the
// file has them, Q5_K's and Q6_K's a byte each — so a kernel dequantizes a
// k-quant exactly as it does Q4_1 or Q8_0.
//
// Layouts (ggml's, little-endian):
//   Q4_K (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for 8
//        sub-blocks of 32, 128 bytes of nibbles; x = d*sc*q - dmin*m.
//   Q5_K (176 bytes): as Q4_K plus 32 bytes of fifth bits before the nibbles.
//   Q6_K (210 bytes): 128 bytes of low nibbles, 64 bytes of 2-bit highs, 16
//        i8 scales for 16 sub-blocks of 16, f16 d; x = d*sc*(q - 32).
#pragma once

#include <cstdint>

namespace lumen::io {

inline constexpr int kKQuantElements = 256;

// Q4_K super-block -> its 128 bytes of nibbles as they are (each 64 elements: 32
// bytes, element l in the low nibble of byte l, element 32 + l in its high one),
// 8 scales d*sc and 8 mins -dmin*m (x = q * scale + min, Q4_1's form).
void split_q4_k(const unsigned char* block, unsigned char* nibbles, float* scales, float* mins);
// Q5_K super-block -> 256 u8 quants (the fifth bits joined), scales and mins as split_q4_k's.
void unpack_q5_k(const unsigned char* block, unsigned char* quants, float* scales, float* mins);
// Q6_K super-block b of a row of K elements -> lumen's quarter-major row
// (WeightFormat::Q6_K). The file's 128-element halves each hold 64 bytes of
// low nibbles and 32 of bit pairs: element 32c + l (quarter c < 4, l < 32) of
// a half takes the low (c < 2) or high nibble of byte 32(c % 2) + l and bit
// pair c of bit-pair byte l. Row position m = 32·(the row's half) + l then
// stands for quarter c's element: `low` [2, K/4] gets byte 32s + l at
// s·K/4 + m, `pairs` [K/4] byte l at m (the file's order), `scales`
// [4, K/64] d·sc of element (c, m) at c·K/64 + m/16. Pointers are the row's.
void split_q6_k(const unsigned char* block, int64_t b, int64_t k, unsigned char* low, unsigned char* pairs,
                float* scales);

}  // namespace lumen::io
