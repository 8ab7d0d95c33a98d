// Opsets 7 to 12: ops deprecated before opset 13 (Upsample, Scatter) and the
// check that refuses an op whose older form lumen does not read. Forms that
// differ only by attributes that became inputs are read by the builders
// themselves (Squeeze / Reduce* `axes`, Split `split`, Dropout `ratio`), and
// Softmax's 2-D coercion before opset 13 by the softmax builder.
#include <map>

#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

// Op -> the first opset whose form lumen reads (older models carry an
// incompatible definition: attributes where inputs are now, other semantics).
const std::map<std::string, int>& first_read_opset() {
  static const std::map<std::string, int> table{
      {"Scan", 9},       // opset 8's Scan has a batch axis and a sequence_lens input
      {"Slice", 10},     // starts / ends / axes were attributes
      {"TopK", 10},      // k was an attribute
      {"Pad", 11},       // pads / value were attributes
      {"Clip", 11},      // min / max were attributes
      {"Resize", 11},    // opset 10's Resize has no roi and other coordinates
      {"ConvTranspose", 11},  // auto_pad SAME_UPPER / SAME_LOWER were swapped before
      {"Mod", 10},
      {"Loop", 11},
      {"If", 11},
      {"ScatterElements", 11},
      {"ScatterND", 11},
      {"GatherND", 11},
      {"Range", 11},
      {"CumSum", 11},
      {"Det", 11},
      {"Round", 11},
      {"BitShift", 11},
      {"Einsum", 12},
      {"Celu", 12},
      {"NegativeLogLikelihoodLoss", 12},
      {"SoftmaxCrossEntropyLoss", 12},
      {"ArgMax", 11},
      {"ArgMin", 11},
      {"DepthToSpace", 11},
  };
  return table;
}

// Upsample (deprecated in opset 10): nearest with whole-number scales, i.e.
// each element repeated `scale` times along its axis.
std::vector<Value> upsample(NodeContext& n) {
  std::string mode = n.attr_string("mode", "nearest");
  Tensor x = n.in(0);
  std::vector<double> scales = n.has(1) ? n.reals(1) : n.attr_floats("scales");
  if (mode != "nearest") n.unsupported_attribute("mode", "'" + mode + "' (lumen reads Upsample with nearest only; use Resize)");
  if (scales.size() != x.rank()) fail("onnx: ", n.where(), ": scales has ", scales.size(), " entries for rank ", x.rank());
  for (size_t d = 0; d < scales.size(); ++d) {
    int64_t s = static_cast<int64_t>(scales[d]);
    if (static_cast<double>(s) != scales[d] || s < 1) n.unsupported("Upsample with a scale that is not a whole number");
    if (s == 1) continue;
    Shape grown = x.shape();
    Shape spread = grown;
    spread.insert(spread.begin() + static_cast<long>(d) + 1, Expr(s));
    grown[d] = grown[d] * Expr(s);
    x = x.unsqueeze(static_cast<int>(d) + 1).expand(spread).reshape(grown);
  }
  return {Value::of(x, n.onnx_type(0))};
}

}  // namespace

void check_opset_form(NodeContext& n) {
  auto it = first_read_opset().find(n.op_type());
  if (it == first_read_opset().end() || n.opset() >= it->second) return;
  n.unsupported("the opset-" + std::to_string(n.opset()) + " form of " + n.op_type() + " (lumen reads it from opset " +
                std::to_string(it->second) + "; convert the model with onnx.version_converter)");
}

void add_legacy_ops(OpTable& t) {
  t["Upsample"] = upsample;
  t["Scatter"] = t.at("ScatterElements");  // Scatter (opsets 9, 10) is ScatterElements under its old name
}

}  // namespace lumen::onnx
