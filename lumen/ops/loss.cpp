#include "lumen/ops/loss.h"

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/indexing.h"
#include "lumen/ops/reduce.h"

namespace lumen::ops {

namespace {

Tensor reduce_loss(const Tensor& loss, const std::string& reduction, const char* op) {
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss);
  if (reduction == "mean") return mean(loss);
  fail(op, ": unknown reduction '", reduction, "' (use mean, sum or none)");
}

}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const std::string& reduction, double label_smoothing) {
  const char* op = "cross_entropy";
  if (!is_float(input.dtype())) fail(op, ": input must be float logits, got ", dtype_name(input.dtype()));
  if (label_smoothing < 0 || label_smoothing > 1) fail(op, ": label_smoothing must be in [0, 1]");
  bool unbatched = input.rank() == 1;
  Tensor x = unbatched ? input.unsqueeze(0) : input;
  Tensor logp = log_softmax(x, 1);
  const Expr& classes = x.shape()[1];
  Tensor loss;
  if (is_float(target.dtype())) {  // class probabilities
    Tensor t = unbatched ? target.unsqueeze(0) : target;
    if (t.rank() != x.rank()) fail(op, ": probability target ", to_string(target.shape()), " must match input ", to_string(input.shape()));
    if (label_smoothing > 0) t = t * (1.0 - label_smoothing) + label_smoothing / static_cast<double>(classes.value());
    loss = neg(sum(logp * t, {1}));
  } else {
    Tensor t = unbatched ? target.unsqueeze(0) : target;
    if (t.rank() + 1 != x.rank()) {
      fail(op, ": class-index target ", to_string(target.shape()), " must have one dim fewer than input ",
           to_string(input.shape()));
    }
    Tensor picked = gather(logp, 1, t.unsqueeze(1).cast(DType::I32)).squeeze(1);
    loss = neg(picked);
    if (label_smoothing > 0) {
      Tensor smooth = neg(mean(logp, {1}));
      loss = loss * (1.0 - label_smoothing) + smooth * label_smoothing;
    }
  }
  if (unbatched) loss = loss.squeeze(0);
  return reduce_loss(loss, reduction, op);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  Tensor d = sub(input, target);
  return reduce_loss(d * d, reduction, "mse_loss");
}

}  // namespace lumen::ops
