// The optimizer ops of the ai.onnx.preview.training domain: Adagrad, Adam and
// Momentum (standard and Nesterov), for one or several tensors per node.
// The iteration count T must be known at import (it picks the update's form).
#include <cmath>

#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

// Inputs R (learning rate), T, then `groups` lists of `count` tensors each: the
// number of optimised tensors.
size_t optimised_count(NodeContext& n, size_t groups) {
  if (n.num_inputs() < 2 + groups || (n.num_inputs() - 2) % groups != 0) {
    fail("onnx: ", n.where(), ": expects R, T and ", groups, " lists of equal length, has ", n.num_inputs(), " inputs");
  }
  return (n.num_inputs() - 2) / groups;
}

int64_t iteration(NodeContext& n) {
  std::vector<int64_t> t = n.ints(1);
  if (t.size() != 1) fail("onnx: ", n.where(), ": T must be a scalar");
  return t[0];
}

std::vector<Value> adagrad(NodeContext& n) {
  double decay = n.attr_float("decay_factor", 0.0), eps = n.attr_float("epsilon", 0.0), norm = n.attr_float("norm_coefficient", 0.0);
  size_t count = optimised_count(n, 3);
  Tensor r = n.in(0) * (1.0 / (1.0 + static_cast<double>(iteration(n)) * decay));
  std::vector<Value> xs, hs;
  for (size_t k = 0; k < count; ++k) {
    Tensor x = n.in(2 + k), g = n.in(2 + count + k), h = n.in(2 + 2 * count + k);
    Tensor reg = ops::add(x * norm, g);
    Tensor h_new = ops::add(h, ops::mul(reg, reg));
    Tensor x_new = ops::sub(x, ops::div(ops::mul(r, reg), ops::sqrt(h_new) + eps));
    xs.push_back(Value::of(x_new.cast(x.dtype()), n.onnx_type(2 + k)));
    hs.push_back(Value::of(h_new.cast(h.dtype()), n.onnx_type(2 + 2 * count + k)));
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

std::vector<Value> adam(NodeContext& n) {
  double alpha = n.attr_float("alpha", 0.9), beta = n.attr_float("beta", 0.999), eps = n.attr_float("epsilon", 0.0);
  double norm = n.attr_float("norm_coefficient", 0.0), post = n.attr_float("norm_coefficient_post", 0.0);
  size_t count = optimised_count(n, 4);
  int64_t t = iteration(n);
  double adjust = t > 0 ? std::sqrt(1 - std::pow(beta, static_cast<double>(t))) / (1 - std::pow(alpha, static_cast<double>(t))) : 1.0;
  Tensor r = n.in(0) * adjust;
  std::vector<Value> xs, vs, hs;
  for (size_t k = 0; k < count; ++k) {
    Tensor x = n.in(2 + k), g = n.in(2 + count + k), v = n.in(2 + 2 * count + k), h = n.in(2 + 3 * count + k);
    Tensor reg = ops::add(x * norm, g);
    Tensor v_new = ops::add(v * alpha, reg * (1 - alpha));
    Tensor h_new = ops::add(h * beta, ops::mul(reg, reg) * (1 - beta));
    Tensor x_new = ops::sub(x, ops::mul(r, ops::div(v_new, ops::sqrt(h_new) + eps))) * (1 - post);
    xs.push_back(Value::of(x_new.cast(x.dtype()), n.onnx_type(2 + k)));
    vs.push_back(Value::of(v_new.cast(v.dtype()), n.onnx_type(2 + 2 * count + k)));
    hs.push_back(Value::of(h_new.cast(h.dtype()), n.onnx_type(2 + 3 * count + k)));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

std::vector<Value> momentum(NodeContext& n) {
  double alpha = n.attr_float("alpha", 0.0), beta = n.attr_float("beta", 0.0), norm = n.attr_float("norm_coefficient", 0.0);
  std::string mode = n.attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov") n.unsupported_attribute("mode", "'" + mode + "' is not standard or nesterov");
  size_t count = optimised_count(n, 3);
  double beta_t = iteration(n) > 0 ? beta : 1.0;
  Tensor r = n.in(0);
  std::vector<Value> xs, vs;
  for (size_t k = 0; k < count; ++k) {
    Tensor x = n.in(2 + k), g = n.in(2 + count + k), v = n.in(2 + 2 * count + k);
    Tensor reg = ops::add(x * norm, g);
    Tensor v_new = ops::add(v * alpha, reg * beta_t);
    Tensor step = mode == "standard" ? v_new : ops::add(reg, v_new * alpha);
    Tensor x_new = ops::sub(x, ops::mul(r, step));
    xs.push_back(Value::of(x_new.cast(x.dtype()), n.onnx_type(2 + k)));
    vs.push_back(Value::of(v_new.cast(v.dtype()), n.onnx_type(2 + 2 * count + k)));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

}  // namespace

void add_training_ops(OpTable& t) {
  t[std::string(kTrainingDomain) + ":Adagrad"] = adagrad;
  t[std::string(kTrainingDomain) + ":Adam"] = adam;
  t[std::string(kTrainingDomain) + ":Momentum"] = momentum;
}

}  // namespace lumen::onnx
