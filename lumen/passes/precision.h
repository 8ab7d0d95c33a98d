// The precision pass: a graph computing in f32 rewritten so that its
// contractions (matmuls, attention's products, convolutions: a sum of a
// product whose operands each ignore a dim the other reads) take bf16 or f16
// operands, accumulated in f32. Each operand is rounded once where it is
// produced — Cast(x, bf16) then Cast(·, f32) — and the product and its sum
// stay f32, as do reductions, softmax, norms and residual adds (a sum of
// squares is no contraction: its operands read the same dims). Outputs keep
// their dtypes. The interpreter runs the rewritten graph, so it computes the
// same rounding the compiled kernels do (the CPU's vdpbf16ps takes the bf16
// operands as they are and sums their exact products in f32).
#pragma once

#include <string>
#include <vector>

#include "lumen/core/graph.h"

namespace lumen::passes {

// "fp32" / "f32", "bf16", "fp16" / "f16" -> F32, BF16, F16; throws Error for any other name.
DType precision_named(const std::string& name);
// The name compile options and reports use: "fp32", "bf16", "fp16".
const char* precision_name(DType precision);

struct PrecisionReport {
  DType precision = DType::F32;
  std::vector<NodeId> contractions;  // the rewritten graph's SumReduce nodes whose operands were rounded
  std::vector<NodeId> rounded;       // the rewritten graph's Cast nodes that round an operand
  std::string to_string() const;
};

// The graph rewritten to `precision` (F32: an unchanged copy). `outputs`
// (edges of `graph`) are replaced by the matching edges of the result; the
// graph's own marked outputs, state updates, inputs, dims and constraints
// carry over. Throws Error for a precision other than F32, BF16 or F16.
Graph reduce_precision(const Graph& graph, DType precision, std::vector<Edge>& outputs,
                       PrecisionReport* report = nullptr);

}  // namespace lumen::passes
