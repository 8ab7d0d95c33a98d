// Folding of known integer values (shape arithmetic such as
// Shape -> Gather -> Mul -> Concat -> Reshape) at import time.
#pragma once

#include <functional>
#include <optional>

#include "lumen/io/onnx/node_context.h"

namespace lumen::onnx {

// Both inputs known integers with concrete shapes: the elementwise result
// under numpy broadcasting; std::nullopt otherwise.
std::optional<Value> fold_binary(NodeContext& n, size_t a, size_t b, const std::function<Expr(Expr, Expr)>& f,
                                 int onnx_type);

}  // namespace lumen::onnx
