// Integer dot products for block-quantized weights — a graph → graph rewrite.
//
// A contraction sum_k x[.., m, k] · W[n, k] whose weight W is the
// dequantization of a parameter in one of ggml's block formats (Q8_0 / Q5_0:
// i8 q·d; Q6_K: i8 q·d with a scale every 16; Q4_0: packed nibbles (q - 8)·d; Q4_1: q·d + m; Q4_K: nibbles in
// groups of 64, q·d + m; Q5_1 / Q5_K: u8 q·d + m; blocks of 32) becomes, as
// llama.cpp computes it:
//
//   1. the activation quantized per block of 32 (its own kernels, from
//      primitives): d = max|x| / 127 (rounded to f16, as ggml's block_q8_0
//      stores it), q = round(x / d) (half away from zero, as roundf), the
//      quants stored in the weight's byte order (for packed nibbles: the low
//      and the high half of every group apart), and the sums of the quants of
//      every four bytes (and, for formats with mins, d_x · Σq per block);
//   2. per output, a sum over groups of four weight bytes r of
//        d_w[r] · d_x[r] · (Σ_{t<4} u(w[4r+t]) · q[4r+t] - offset · Σq)
//      (+ Σ_b m_w[b] · d_x[b] · Σq_b over the blocks b, for formats with mins)
//      where u(w) is the weight quant made unsigned (an i8 q as q + 128, a
//      nibble as itself) and the offset takes back what that added (128, 8
//      or 0). Each inner sum of four byte products is what one i32 lane of
//      vpdpbusd computes; the CPU code generator writes it so
//      (lumen/backend/cpu/value_writer.cpp) and the interpreter evaluates the
//      same primitives, so compiled and reference agree exactly up to f32
//      summation order.
//
// Where N is a multiple of 64 (and the quants are i8 or nibbles), the
// weight's bytes, scales and mins are read 64 rows interleaved ([N / 64,
// groups, 64, 4 bytes]; a relayout of parameters, which the compiler makes
// once and keeps between runs): SIMD lanes run along the rows, each lane's
// vpdpbusd takes its row's four bytes against the activation's four (the
// same in every lane), a block's products are summed as integers and its
// scales applied once per block, with the rows' scales a plain vector load.
// The interleaved copy keeps f32 scales and mins (the k-quants' d·sc) as f16:
// a relative error of at most 2^-12 each (a sixteenth of the activation's
// 8-bit rounding) for a sixth fewer bytes a Q4_K weight; f16 scales (Q8_0,
// Q4_0) are kept exactly. Otherwise lanes run along k, as in the sum above.
//
// The weight expression is recognised by what it computes, not how it is
// written: its only inputs are parameters `name.q`, `name.scales` (and
// `name.mins`) of a format's shapes and dtypes, and its value at sampled
// points on random parameter values equals the format's dequantization.
// The rewrite changes numerics (the activation is rounded to 8 bits: a
// relative error of at most 1/254 of each block's largest |x| per element),
// so it is a candidate the compiler measures, never applied silently.
#pragma once

#include <string>
#include <vector>

#include "lumen/core/graph.h"

namespace lumen::compiler {

// One rewritten contraction's shape and format on its own: `graph` computes
// y [1, N] = x [1, K] · Wᵀ with W dequantized by a copy of the original weight
// expression (inputs "x" and the weight's parameters); `rewritten` is the same
// after the rewrite. The compiler checks candidates of graphs too large to
// interpret on these (lumen/compile.cpp).
struct Int8DotProbe {
  std::string label;  // "name (format) N x K"
  Graph graph, rewritten;
  std::vector<Edge> outputs, rewritten_outputs;
};

struct Int8DotRewrite {
  Graph graph;               // the rewritten graph (a copy of the input when nothing was rewritten)
  std::vector<Edge> outputs;  // the outputs in it
  std::vector<std::string> rewritten;  // "name (format)" per rewritten contraction
  std::vector<std::string> refused;    // contractions of quantized parameters left alone, with why
  std::vector<Int8DotProbe> probes;    // one per distinct format and shape rewritten
};

Int8DotRewrite int8_dot_products(const Graph& graph, const std::vector<Edge>& outputs);
// with_probes false: without the probes (a probe's own rewrite).
Int8DotRewrite int8_dot_products(const Graph& graph, const std::vector<Edge>& outputs, bool with_probes);

}  // namespace lumen::compiler
