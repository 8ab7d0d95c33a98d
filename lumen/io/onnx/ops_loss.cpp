// Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (the latter
// is log_softmax over the class axis followed by the former).
#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

// input [N, C, d...] (log-probabilities), target [N, d...] class indices.
Tensor nll(NodeContext& n, const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight) {
  std::string reduction = n.attr_string("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    n.unsupported_attribute("reduction", "must be mean, sum or none");
  }
  bool has_ignore = n.has_attr("ignore_index");
  int64_t ignore = n.attr_int("ignore_index", 0);
  if (input.rank() < 2 || target.rank() != input.rank() - 1) {
    fail("onnx: ", n.where(), ": input ", to_string(input.shape()), " and target ", to_string(target.shape()),
         " must be [N, C, d...] and [N, d...]");
  }
  Tensor t = target.dtype() == DType::I32 ? target : target.cast(DType::I32);
  Tensor keep = has_ignore ? ops::ne(t, t.scalar(static_cast<double>(ignore))) : ops::ones(n.graph(), t.shape(), DType::Bool);
  Tensor safe = ops::where(keep, t, ops::zeros_like(t));
  Tensor picked = ops::gather(input, 1, safe.unsqueeze(1)).squeeze(1);
  Tensor w = keep.cast(input.dtype());
  if (weight) w = ops::mul(w, weight->gather(safe, 0));
  Tensor loss = ops::neg(ops::mul(picked, w));
  if (reduction == "none") return loss;
  if (reduction == "sum") return ops::sum(loss);
  return ops::div(ops::sum(loss), ops::sum(w));
}

std::vector<Value> nll_loss(NodeContext& n) {
  Tensor input = n.in(0);
  return {Value::of(nll(n, input, n.in(1), n.optional(2)), n.onnx_type(0))};
}

std::vector<Value> softmax_cross_entropy(NodeContext& n) {
  Tensor scores = n.in(0);
  Tensor log_prob = ops::log_softmax(scores, 1);
  std::vector<Value> out{Value::of(nll(n, log_prob, n.in(1), n.optional(2)), n.onnx_type(0))};
  if (n.output_used(1)) out.push_back(Value::of(log_prob, n.onnx_type(0)));
  return out;
}

}  // namespace

void add_loss_ops(OpTable& t) {
  t["NegativeLogLikelihoodLoss"] = nll_loss;
  t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy;
}

}  // namespace lumen::onnx
