#include "lumen/train/optimizer.h"

#include <cmath>

#include "lumen/core/error.h"
#include "lumen/ops/elementwise.h"

namespace lumen::train {

namespace {

Tensor total(Tensor t) {
  while (t.rank() > 0) t = t.sum_reduce(0);
  return t;
}

Tensor scalar_input(Graph& graph, const char* name) {
  NodeId id = graph.find_input(name);
  if (id >= 0) return graph.tensor(id);
  return graph.input(name, {});
}

Tensor broadcast_to(const Tensor& scalar, const Tensor& like) { return scalar.expand(like.shape()); }

const std::string& param_name(const Graph& graph, const Tensor& p) { return graph.node(p.node_id()).name; }

// Blends `updated` in where apply is 1 (gradient accumulation's update step).
Tensor gated(const Tensor& old, const Tensor& updated, const Tensor& apply) {
  if (!apply.defined()) return updated;
  return old + broadcast_to(apply, old) * (updated - old);
}

struct Context {
  Graph& graph;
  const OptimizerConfig& config;
  Tensor lr, step, apply;
  std::vector<std::string> slots;

  Tensor slot(const Tensor& p, const std::string& name) {
    std::string full = param_name(graph, p) + "." + name;
    slots.push_back(full);
    return graph.state(full, p.shape(), p.dtype());
  }
};

void sgd_update(Context& c, const Tensor& p, Tensor g) {
  const OptimizerConfig& cfg = c.config;
  if (cfg.weight_decay != 0) g = g + p * cfg.weight_decay;
  if (cfg.momentum != 0) {
    Tensor buf = c.slot(p, "momentum");
    // torch starts the buffer at the first gradient (no momentum, no dampening on step 1).
    Tensor first = broadcast_to(c.step.less_than(c.step.scalar(1.5)).cast(p.dtype()), p);
    Tensor next = buf * (1.0 - first) * cfg.momentum + g * (1.0 - (1.0 - first) * cfg.dampening);
    c.graph.assign(buf, gated(buf, next, c.apply));
    g = cfg.nesterov ? g + next * cfg.momentum : next;
  }
  c.graph.assign(p, gated(p, p - g * broadcast_to(c.lr, p), c.apply));
}

void adamw_update(Context& c, const Tensor& p, const Tensor& g) {
  const OptimizerConfig& cfg = c.config;
  Tensor m = c.slot(p, "exp_avg");
  Tensor v = c.slot(p, "exp_avg_sq");
  Tensor m_next = m * cfg.beta1 + g * (1 - cfg.beta1);
  Tensor v_next = v * cfg.beta2 + g * g * (1 - cfg.beta2);
  // 1 - beta^t as exp2(t * log2(beta)), t the step input.
  Tensor bc1 = 1.0 - (c.step * std::log2(cfg.beta1)).exp2();
  Tensor bc2 = 1.0 - (c.step * std::log2(cfg.beta2)).exp2();
  Tensor step_size = c.lr * bc1.recip();
  Tensor denom = v_next.sqrt() * broadcast_to(bc2.sqrt().recip(), p) + cfg.eps;
  Tensor decayed = p * (1.0 - broadcast_to(c.lr, p) * cfg.weight_decay);
  Tensor next = decayed - broadcast_to(step_size, p) * m_next * denom.recip();
  c.graph.assign(m, gated(m, m_next, c.apply));
  c.graph.assign(v, gated(v, v_next, c.apply));
  c.graph.assign(p, gated(p, next, c.apply));
}

// Accumulated gradients: "<param>.grad_acc" sums micro-steps; on the update
// step the sum (with this step's gradient, averaged) is used and reset.
std::vector<Tensor> accumulate(Context& c, const std::vector<Tensor>& params, const std::vector<Tensor>& grads) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor acc = c.slot(params[i], "grad_acc");
    Tensor sum = acc + grads[i];
    c.graph.assign(acc, sum * (1.0 - broadcast_to(c.apply, sum)));
    out.push_back(sum * (1.0 / c.config.accumulation));
  }
  return out;
}

// torch.nn.utils.clip_grad_norm_: scale = min(1, max_norm / (norm + 1e-6)).
std::vector<Tensor> clip(const std::vector<Tensor>& grads, double max_norm) {
  Tensor squares;
  for (const Tensor& g : grads) {
    Tensor s = total(g * g);
    squares = squares.defined() ? squares + s : s;
  }
  Tensor ratio = (squares.sqrt() + 1e-6).recip() * max_norm;
  Tensor scale = ops::minimum(ratio, ratio.scalar(1.0));
  std::vector<Tensor> out;
  for (const Tensor& g : grads) out.push_back(g * broadcast_to(scale, g));
  return out;
}

void check(const Graph& graph, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
           const OptimizerConfig& config) {
  if (params.size() != grads.size()) fail("optimizer: ", params.size(), " parameters but ", grads.size(), " gradients");
  if (config.accumulation < 1) fail("optimizer: accumulation must be >= 1, got ", config.accumulation);
  if (config.clip_norm < 0) fail("optimizer: clip_norm must be >= 0 (0: off), got ", config.clip_norm);
  if (config.kind == OptimizerKind::AdamW && (config.beta1 <= 0 || config.beta1 >= 1 || config.beta2 <= 0 || config.beta2 >= 1)) {
    fail("optimizer: AdamW betas must lie in (0, 1), got ", config.beta1, " and ", config.beta2);
  }
  for (const Tensor& p : params) {
    const Node& n = graph.node(p.node_id());
    if (n.op != Op::Input || !n.persistent || !p.view().is_contiguous() || p.view().shape() != n.shape) {
      fail("optimizer: parameters must be whole state tensors (Graph::state), so updates land in place; got a ",
           op_name(n.op), " node '", n.name, "'");
    }
    if (n.dtype != DType::F32) fail("optimizer: parameter '", n.name, "' is ", dtype_name(n.dtype), "; only f32 is trained");
  }
}

}  // namespace

std::vector<std::string> add_optimizer(Graph& graph, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                       const OptimizerConfig& config) {
  check(graph, params, grads, config);
  Context c{graph, config, scalar_input(graph, kLearningRateInput), scalar_input(graph, kStepInput), Tensor(), {}};
  if (config.accumulation > 1) c.apply = scalar_input(graph, kApplyInput);
  std::vector<Tensor> g = config.accumulation > 1 ? accumulate(c, params, grads) : grads;
  if (config.clip_norm > 0) g = clip(g, config.clip_norm);
  for (size_t i = 0; i < params.size(); ++i) {
    if (config.kind == OptimizerKind::Sgd) {
      sgd_update(c, params[i], g[i]);
    } else {
      adamw_update(c, params[i], g[i]);
    }
  }
  return c.slots;
}

const char* optimizer_name(OptimizerKind kind) { return kind == OptimizerKind::Sgd ? "sgd" : "adamw"; }

OptimizerKind optimizer_named(const std::string& name) {
  if (name == "sgd") return OptimizerKind::Sgd;
  if (name == "adamw") return OptimizerKind::AdamW;
  fail("optimizer: unknown optimizer '", name, "' (use 'sgd' or 'adamw')");
}

}  // namespace lumen::train
