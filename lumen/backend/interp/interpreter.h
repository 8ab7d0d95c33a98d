// The reference interpreter: evaluates any graph, any dtype, any binding of
// dynamic dims, one element at a time. Obviously correct over fast; it is the
// oracle every compiled kernel is checked against.
//
// Semantics it defines (docs/semantics.md lists them for users):
//   floats compute in double and round to the node's dtype after every op;
//   SumReduce accumulates in double and rounds once.
//   Log2(x<0) = NaN, Log2(0) = -inf, Sqrt(x<0) = NaN, Recip(±0) = ±inf.
//   Mod is the truncated remainder (C fmod / %): sign of the dividend;
//   float x mod 0 = NaN, integer x mod 0 = 0.
//   i32 Add/Mul wrap around (two's complement). bool Add = or, Mul = and.
//   MaxReduce propagates NaN; an empty max is -inf (floats), INT32_MIN (i32), false.
//   Cast float->i32 truncates toward zero and saturates; NaN -> 0.
//   Gather with an index outside [0, size) raises lumen::Error.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lumen/core/array.h"
#include "lumen/core/graph.h"

namespace lumen::interp {

class Interpreter {
 public:
  explicit Interpreter(const Graph& graph) : graph_(graph) {}

  // Evaluates `outputs` (each returned contiguous). Inputs are matched by
  // name; `bindings` may pre-bind dynamic dims, the rest come from input shapes.
  std::vector<Array> run(const std::map<std::string, Array>& inputs, const std::vector<Edge>& outputs,
                         Bindings bindings = {}) const;

 private:
  const Graph& graph_;
};

}  // namespace lumen::interp
