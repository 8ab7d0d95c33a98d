// Recurrent layers: RNN, GRU and LSTM, unrolled over the (concrete) sequence
// at import. Forward, reverse and bidirectional; layout 0 ([seq, batch, ...])
// and 1 ([batch, seq, ...]); biases, initial states, LSTM peepholes, GRU's
// linear_before_reset, clip, and the activation functions the spec names.
#include <functional>

#include "lumen/core/error.h"
#include "lumen/io/onnx/op_table.h"
#include "lumen/ops/ops.h"

namespace lumen::onnx {

namespace {

constexpr int64_t kMaxSteps = 4096;

using Activation = std::function<Tensor(const Tensor&)>;

Activation activation(NodeContext& n, const std::string& name, double alpha, double beta, bool has_alpha, bool has_beta) {
  if (name == "Sigmoid") return [](const Tensor& x) { return ops::sigmoid(x); };
  if (name == "Tanh") return [](const Tensor& x) { return ops::tanh(x); };
  if (name == "Relu") return [](const Tensor& x) { return ops::relu(x); };
  if (name == "Softsign") return [](const Tensor& x) { return ops::div(x, ops::add(ops::abs(x), x.scalar(1))); };
  if (name == "Softplus") return [](const Tensor& x) { return ops::softplus(x); };
  if (name == "LeakyRelu") {
    double a = has_alpha ? alpha : 0.01;
    return [a](const Tensor& x) { return ops::leaky_relu(x, a); };
  }
  if (name == "ThresholdedRelu") {
    double a = has_alpha ? alpha : 1.0;
    return [a](const Tensor& x) { return ops::where(ops::gt(x, x.scalar(a)), x, ops::zeros_like(x)); };
  }
  if (name == "HardSigmoid") {
    double a = has_alpha ? alpha : 0.2, b = has_beta ? beta : 0.5;
    return [a, b](const Tensor& x) { return ops::clamp(x * a + b, 0.0, 1.0); };
  }
  if (name == "Affine") {
    double a = has_alpha ? alpha : 1.0, b = has_beta ? beta : 0.0;
    return [a, b](const Tensor& x) { return x * a + b; };
  }
  if (name == "ScaledTanh") {
    double a = has_alpha ? alpha : 1.0, b = has_beta ? beta : 1.0;
    return [a, b](const Tensor& x) { return ops::tanh(x * b) * a; };
  }
  if (name == "Elu") {
    double a = has_alpha ? alpha : 1.0;
    return [a](const Tensor& x) { return ops::where(ops::gt(x, x.scalar(0)), x, (ops::exp(ops::minimum(x, x.scalar(0))) - 1.0) * a); };
  }
  n.unsupported_attribute("activations", "'" + name + "' is not an activation lumen knows");
}

// The layer's shared attributes and inputs, with X as [seq, batch, input].
struct Layer {
  int64_t hidden = 0, gates = 1, steps = 0, directions = 1;
  bool batch_first = false, reverse = false;
  double clip = 0;
  Tensor x, w, r;
  std::optional<Tensor> bias;               // [dirs, 2 * gates * hidden]
  std::optional<Tensor> initial_h, initial_c;  // [dirs, batch, hidden]
  std::vector<Activation> f;                // per direction: the spec's activations in order
};

Layer read_layer(NodeContext& n, int64_t gates, const std::vector<std::string>& defaults) {
  Layer l;
  l.gates = gates;
  l.hidden = n.attr_int("hidden_size");
  std::string direction = n.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    n.unsupported_attribute("direction", "'" + direction + "'");
  }
  l.directions = direction == "bidirectional" ? 2 : 1;
  l.reverse = direction == "reverse";
  l.batch_first = n.attr_int("layout", 0) != 0;
  l.clip = n.attr_float("clip", 0.0);
  l.x = n.in(0);
  if (l.x.rank() != 3) fail("onnx: ", n.where(), ": X ", to_string(l.x.shape()), " must be 3-D");
  if (l.batch_first) l.x = l.x.transpose(0, 1);
  if (!l.x.shape()[0].is_const()) n.unsupported("a dynamic sequence length (the layer is unrolled at import)");
  l.steps = l.x.shape()[0].value();
  if (l.steps > kMaxSteps) n.unsupported("a sequence longer than " + std::to_string(kMaxSteps) + " steps");
  l.w = n.in(1);
  l.r = n.in(2);
  l.bias = n.optional(3);
  if (n.has(4)) {  // sequence_lens: lumen runs whole sequences only
    for (int64_t len : n.ints(4)) {
      if (len != l.steps) n.unsupported("sequence_lens shorter than the sequence (" + std::to_string(len) + " of " + std::to_string(l.steps) + ")");
    }
  }
  auto state = [&](size_t i) -> std::optional<Tensor> {
    std::optional<Tensor> s = n.optional(i);
    if (s && l.batch_first) s = s->transpose(0, 1);
    return s;
  };
  l.initial_h = state(5);
  if (gates == 4) l.initial_c = state(6);
  std::vector<double> alpha = n.attr_floats("activation_alpha"), beta = n.attr_floats("activation_beta");
  std::vector<std::string> given = n.attr_strings("activations");
  size_t per = defaults.size(), count = per * static_cast<size_t>(l.directions);
  if (!given.empty() && given.size() != count) fail("onnx: ", n.where(), ": activations has ", given.size(), " entries, expected ", count);
  for (size_t k = 0; k < count; ++k) {
    std::string name = given.empty() ? defaults[k % per] : given[k];
    l.f.push_back(activation(n, name, k < alpha.size() ? alpha[k] : 0, k < beta.size() ? beta[k] : 0, k < alpha.size(), k < beta.size()));
  }
  return l;
}

Tensor direction_of(const Tensor& t, int64_t d) { return t.slice(0, Expr(d), Expr(d + 1)).squeeze(0); }

// Gate columns [k * hidden, (k + 1) * hidden) of the last dim.
Tensor gate(const Tensor& t, int64_t k, int64_t hidden) {
  int axis = static_cast<int>(t.rank()) - 1;
  return t.slice(axis, Expr(k * hidden), Expr((k + 1) * hidden));
}

// One direction's weights: the input part X W^T + Wb for every step [seq, batch, G * H],
// R^T [H, G * H] and the recurrent bias Rb [G * H] (zeros without B).
struct Direction {
  Tensor xw, rt, rb;
  const Activation* f = nullptr;  // this direction's activations
  int64_t index = 0;              // 0 forward (or the only direction), 1 backward
};

Direction direction(const Layer& l, int64_t d) {
  Direction out;
  out.index = d;
  int64_t gh = l.gates * l.hidden;
  out.xw = ops::matmul(l.x, direction_of(l.w, d).transpose(0, 1));
  out.rt = direction_of(l.r, d).transpose(0, 1);
  if (l.bias) {
    Tensor b = direction_of(*l.bias, d);
    out.xw = ops::add(out.xw, b.slice(0, Expr(0), Expr(gh)));
    out.rb = b.slice(0, Expr(gh), Expr(2 * gh));
  } else {
    out.rb = ops::zeros(*l.x.graph(), {Expr(gh)}, l.x.dtype());
  }
  out.f = &l.f[static_cast<size_t>(d) * (l.f.size() / static_cast<size_t>(l.directions))];
  return out;
}

Tensor clipped(const Layer& l, const Tensor& x) { return l.clip > 0 ? ops::clamp(x, -l.clip, l.clip) : x; }

Tensor initial(const Layer& l, const std::optional<Tensor>& s, int64_t d) {
  if (s) return direction_of(*s, d);
  return ops::zeros(*l.x.graph(), {l.x.shape()[1], Expr(l.hidden)}, l.x.dtype());
}

// A cell: (H, C, input part of step t) -> new (H, C); C is unused except by LSTM.
using Cell = std::function<std::pair<Tensor, Tensor>(const Direction&, const Tensor&, const Tensor&, const Tensor&)>;

// Runs every direction over the sequence: Y [seq, dirs, batch, H], Y_h and Y_c [dirs, batch, H]
// (layout 1: Y [batch, seq, dirs, H], Y_h / Y_c [batch, dirs, H]).
std::vector<Value> run_layer(NodeContext& n, const Layer& l, const Cell& cell) {
  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < l.directions; ++d) {
    Direction dir = direction(l, d);
    Tensor h = initial(l, l.initial_h, d), c = initial(l, l.initial_c, d);
    bool backward = l.reverse || d == 1;
    std::vector<Tensor> y(static_cast<size_t>(l.steps));
    for (int64_t k = 0; k < l.steps; ++k) {
      int64_t t = backward ? l.steps - 1 - k : k;
      std::tie(h, c) = cell(dir, h, c, direction_of(dir.xw, t));
      y[static_cast<size_t>(t)] = h;
    }
    ys.push_back(ops::stack(y, 0));  // [seq, batch, H]
    hs.push_back(h);
    cs.push_back(c);
  }
  Tensor y = ops::stack(ys, 1), yh = ops::stack(hs, 0), yc = ops::stack(cs, 0);
  if (l.batch_first) {
    y = y.permute({2, 0, 1, 3});
    yh = yh.transpose(0, 1);
    yc = yc.transpose(0, 1);
  }
  int type = n.onnx_type(0);
  return {Value::of(y, type), Value::of(yh, type), Value::of(yc, type)};
}

std::vector<Value> rnn(NodeContext& n) {
  Layer l = read_layer(n, 1, {"Tanh"});
  return run_layer(n, l, [&](const Direction& d, const Tensor& h, const Tensor& c, const Tensor& xw) {
    Tensor pre = ops::add(ops::add(xw, ops::matmul(h, d.rt)), d.rb);
    return std::make_pair(d.f[0](clipped(l, pre)), c);
  });
}

// Gates z, r, h; linear_before_reset applies r after the recurrent product.
std::vector<Value> gru(NodeContext& n) {
  Layer l = read_layer(n, 3, {"Sigmoid", "Tanh"});
  bool before = n.attr_int("linear_before_reset", 0) != 0;
  int64_t hs = l.hidden;
  return run_layer(n, l, [&](const Direction& d, const Tensor& h, const Tensor& c, const Tensor& xw) {
    Tensor hr = ops::matmul(h, gate(d.rt, 0, 2 * hs));  // z and r recurrent parts
    Tensor z = d.f[0](clipped(l, ops::add(ops::add(gate(xw, 0, hs), gate(hr, 0, hs)), gate(d.rb, 0, hs))));
    Tensor r = d.f[0](clipped(l, ops::add(ops::add(gate(xw, 1, hs), gate(hr, 1, hs)), gate(d.rb, 1, hs))));
    Tensor rh = gate(d.rt, 2, hs), bh = gate(d.rb, 2, hs);
    Tensor recurrent = before ? ops::mul(r, ops::add(ops::matmul(h, rh), bh)) : ops::add(ops::matmul(ops::mul(r, h), rh), bh);
    Tensor cand = d.f[1](clipped(l, ops::add(gate(xw, 2, hs), recurrent)));
    Tensor next = ops::add(ops::mul(ops::sub(ops::ones_like(z), z), cand), ops::mul(z, h));
    return std::make_pair(next, c);
  });
}

// Gates i, o, f, c; peepholes P = [Pi, Po, Pf].
std::vector<Value> lstm(NodeContext& n) {
  Layer l = read_layer(n, 4, {"Sigmoid", "Tanh", "Tanh"});
  if (n.attr_int("input_forget", 0) != 0) n.unsupported_attribute("input_forget", "1 (coupled input and forget gates) is not supported");
  std::optional<Tensor> peep = n.optional(7);
  int64_t hs = l.hidden;
  return run_layer(n, l, [&](const Direction& d, const Tensor& h, const Tensor& c, const Tensor& xw) {
    Tensor pre = ops::add(ops::add(xw, ops::matmul(h, d.rt)), d.rb);
    auto peephole = [&](int64_t k, const Tensor& state) {
      return peep ? ops::mul(gate(direction_of(*peep, d.index), k, hs), state) : ops::zeros_like(state);
    };
    Tensor i = d.f[0](clipped(l, ops::add(gate(pre, 0, hs), peephole(0, c))));
    Tensor f = d.f[0](clipped(l, ops::add(gate(pre, 2, hs), peephole(2, c))));
    Tensor cand = d.f[1](clipped(l, gate(pre, 3, hs)));
    Tensor cell = ops::add(ops::mul(f, c), ops::mul(i, cand));
    Tensor o = d.f[0](clipped(l, ops::add(gate(pre, 1, hs), peephole(1, cell))));
    return std::make_pair(ops::mul(o, d.f[2](cell)), cell);
  });
}

}  // namespace

void add_rnn_ops(OpTable& t) {
  t["RNN"] = rnn;
  t["GRU"] = gru;
  t["LSTM"] = lstm;
}

}  // namespace lumen::onnx
