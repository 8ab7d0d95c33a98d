#include "lumen/kernel/fusion.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lumen/core/debug_flags.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/known_region.h"
#include "lumen/kernel/lower.h"

namespace lumen::kernel {

namespace {

// The cost per element (op_cost units: a vectorised transcendental is 5) from
// which a value computed from indices alone is worth a buffer when recomputed.
constexpr double kWorthABuffer = 5;

// Rough ALU cost of evaluating a node once, given its inputs. Transcendentals
// cost ~1 op per element in SIMD code but tens as scalar calls, and rows
// whose length is not a multiple of the SIMD width are not vectorised.
double op_cost(const Node& n) {
  if (n.op == Op::Recip || n.op == Op::Sqrt) return 2;
  if (is_unary(n.op)) {
    int64_t row = n.shape.empty() ? 1 : known_factor(n.shape.back());
    return row > 0 && row % 16 == 0 ? 5 : 40;
  }
  if (is_binary(n.op)) return 1;
  if (n.op == Op::Gather) return 2;
  return 0;
}

// Rounding to f16/bf16 costs a few ops per element (a bf16 matmul's operand,
// read by every column panel, is rounded once into a buffer), except for a
// parameter's: the pack that reads it rounds it once and is kept between runs.
double rounding_cost(const Graph& graph, const Node& n) {
  if (n.op != Op::Cast || (n.dtype != DType::F16 && n.dtype != DType::BF16)) return 0;
  const Node& in = graph.node(n.inputs[0].node);
  return in.op == Op::Input && in.parameter ? 0 : 4;
}

double assumed_numel(const Shape& shape, double assumed_dim) {
  double n = 1;
  for (const Expr& d : shape) {
    Bindings b;
    for (const Expr& v : expr_vars(d)) b[v.name()] = static_cast<int64_t>(assumed_dim);
    n *= static_cast<double>(evaluate(d, b));
  }
  return std::max(n, 1.0);
}

// A view that visits every point of its source once, in another order (a
// permutation of dims, not a reshape).
bool reorders(const View& v) {
  if (v.has_mask()) return false;
  std::vector<Expr> at = loop_indices(v.shape());
  View::Index i = v.index(at);
  if (!i.valid.is_const(1)) return false;
  Expr flat = flat_index(v.shape(), at);
  if (simplify(i.index) == flat) return false;
  return !v.injective_condition().is_const(0);
}

// A view that pads a dim of more than one element (a convolution's border), not one that
// stacks a value beside another (a max over a stacked pair: a ReLU, a clamp).
bool pads_a_run(const View& v) {
  for (const ViewLayer& l : v.layers()) {
    for (size_t d = 0; d < l.mask.size(); ++d) {
      const auto& [begin, end] = l.mask[d];
      if (begin.is_const(0) && simplify(end - l.shape[d]).is_const(0)) continue;  // not padded
      Expr valid = simplify(end - begin);
      if (!valid.is_const() || valid.value() > 1) return true;
    }
  }
  return false;
}

// Whether `v` reads its source point for point, in the source's own order.
bool in_place(const View& v, const Shape& source) {
  if (v.has_mask() || v.shape() != source) return false;
  std::vector<Expr> at = loop_indices(v.shape());
  View::Index i = v.index(at);
  return i.valid.is_const(1) && simplify(i.index) == flat_index(source, at);
}

using KernelCounts = std::vector<std::vector<std::pair<size_t, double>>>;  // per kernel: nodes inlined, evaluations

// An epilogue that reads a contraction more than once (a hardswish, x·relu6(x + 3)/6) made the
// contraction a value with two readers, a buffer of its own, and the epilogue a pass over it.
// Where every reader reads it in place and ended up in one elementwise kernel, each computed
// there once per point, and that kernel holds no reduction of its own, the contraction joins
// that kernel: its epilogue computed from the accumulators, one pass fewer over the value.
void fold_repeated_epilogues(const Graph& graph, const std::vector<Edge>& outputs, const LowerOptions& lower_options,
                             Partition& p, KernelCounts& counts) {
  size_t n = graph.size();
  std::vector<std::vector<size_t>> readers(n);
  for (size_t r = 0; r < n; ++r) {
    for (const Edge& e : graph.nodes()[r].inputs) readers[static_cast<size_t>(e.node)].push_back(r);
  }
  std::vector<bool> output(n, false);
  for (const Edge& e : outputs) output[static_cast<size_t>(e.node)] = true;
  auto contraction = [&](size_t j) {
    const Node& x = graph.nodes()[j];
    return is_reduce(x.op) && sums_product_in_place(graph, x);
  };
  auto reduces = [&](size_t k) {  // (a max over a stacked pair, a ReLU's, is elementwise)
    return std::any_of(counts[k].begin(), counts[k].end(), [&](const auto& c) {
      const Node& x = graph.nodes()[c.first];
      return is_reduce(x.op) && !is_small_reduce(x);
    });
  };
  auto points = [&](size_t j) { return assumed_numel(graph.nodes()[j].shape, lower_options.assumed_dim); };
  for (size_t i = 0; i < n; ++i) {
    const Node& node = graph.nodes()[i];
    if (!p.materialized[i] || node.op == Op::Input || node.op == Op::Contiguous || output[i]) continue;
    bool holds = contraction(i) || std::any_of(counts[i].begin(), counts[i].end(), [&](const auto& c) {
      return contraction(c.first);
    });
    if (readers[i].size() < 2 || !holds) continue;
    bool fits = true;
    for (size_t r : readers[i]) {
      const Node& reader = graph.nodes()[r];
      fits = fits && is_elementwise(reader.op);
      for (const Edge& e : reader.inputs) {
        fits = fits && (static_cast<size_t>(e.node) != i || in_place(e.view, node.shape));
      }
    }
    size_t home = n;  // the one kernel computing every reader
    for (size_t k = 0; k < n && fits; ++k) {
      if (!p.materialized[k] || graph.nodes()[k].op == Op::Input) continue;
      size_t found = 0;
      for (size_t r : readers[i]) {
        double evaluations = r == k ? points(r) : 0;
        for (const auto& [j, count] : counts[k]) {
          if (j == r) evaluations = count;
        }
        if (evaluations == 0) continue;
        fits = fits && evaluations == points(r);  // once per point, not at a window's taps
        ++found;
      }
      if (found == 0) continue;
      fits = fits && home == n && found == readers[i].size();
      home = k;
    }
    if (!fits || home == n) continue;
    const Node& epilogue = graph.nodes()[home];
    if (!is_elementwise(epilogue.op) || reduces(home) || epilogue.shape != node.shape) continue;
    p.materialized[i] = false;
    LoweredKernel k =
        lower(graph, static_cast<NodeId>(home), p.materialized, Schedule(epilogue.shape), "k", lower_options);
    counts[home].clear();
    for (size_t j = 0; j < n; ++j) {
      if (k.evaluations[j] > 0 && j != home) counts[home].emplace_back(j, k.evaluations[j]);
    }
  }
}

}  // namespace

Partition partition(const Graph& graph, const std::vector<Edge>& outputs, const FusionOptions& options) {
  size_t n = graph.size();
  Partition p;
  p.materialized.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    Op op = graph.nodes()[i].op;
    if (op == Op::Input || op == Op::Contiguous) p.materialized[i] = true;
  }
  for (const Edge& e : outputs) p.materialized[static_cast<size_t>(e.node)] = true;

  // Buffers given up front, before any lowering. The rounds below would
  // materialise these anyway, but lowering them inline first costs time
  // exponential in how deeply such values nest (a residual stream read by a
  // norm and by the next residual, layer after layer):
  //  - a value holding a reduction, read through two or more different views
  //    (rotary embeddings, concatenated caches);
  //  - a value holding a contraction (a sum of a product: a matmul), read by
  //    two or more consumers, or through a view that skips some of its points
  //    (a slice) or visits them in another order (a transpose): inlined there,
  //    it would be computed in the consumer's loops without a register tile;
  //    copied through a padded view (the next convolution's padded copy) or
  //    passed over elementwise there (a max pool's -inf border added, a class
  //    token's row put before flattened patches), the
  //    contraction itself is given a buffer, and what it feeds (a bias, a ReLU)
  //    is left to that pass. (A window that reads it through the padding in
  //    place, a depthwise conv of channels-last values, is no copy: the value
  //    and its epilogue are one kernel, as for any other reader.)
  // In graph order, so a buffer given here stops what its consumers hold
  // (scores read by a softmax's max and sum hold no contraction of their own).
  {
    std::vector<std::vector<View>> views(n);
    std::vector<int> uses(n, 0);
    auto read = [&](const Edge& e) {
      auto in = static_cast<size_t>(e.node);
      if (std::find(views[in].begin(), views[in].end(), e.view) == views[in].end()) views[in].push_back(e.view);
      ++uses[in];
    };
    std::vector<bool> padded(n, false);  // copied through a padded view (not a stacked pair's)
    for (const Node& node : graph.nodes()) {
      std::for_each(node.inputs.begin(), node.inputs.end(), read);
      for (const Edge& e : node.inputs) {
        // A copy, or an elementwise pass over the padded values (a max pool's -inf border added):
        // the view pads and keeps the value's dims. Windows that read it in place unfold it too.
        // So does a view that flattens it first (a ViT's patch embedding, [1, 768, 14, 14] read as
        // 196 tokens after the class token's row); only windows (unfold) add dims.
        bool whole = node.op == Op::Contiguous || e.view.shape().size() <= graph.node(e.node).shape.size();
        if (whole && pads_a_run(e.view)) padded[static_cast<size_t>(e.node)] = true;
      }
    }
    std::for_each(outputs.begin(), outputs.end(), read);
    std::vector<bool> holds_reduce(n, false);
    std::vector<NodeId> contraction(n, -1);  // the contraction a node holds (one of them); -1: none
    for (size_t i = 0; i < n; ++i) {
      const Node& node = graph.nodes()[i];
      bool r = is_reduce(node.op) && !is_small_reduce(node);
      if (r && sums_product_in_place(graph, node) && !p.materialized[static_cast<size_t>(node.inputs[0].node)]) {
        contraction[i] = static_cast<NodeId>(i);
      }
      for (const Edge& e : node.inputs) {
        auto in = static_cast<size_t>(e.node);
        if (p.materialized[in]) continue;
        r = r || holds_reduce[in];
        if (contraction[i] < 0) contraction[i] = contraction[in];
      }
      holds_reduce[i] = r;
      const bool c = contraction[i] >= 0;
      bool sliced = std::any_of(views[i].begin(), views[i].end(), [&](const View& v) {
        return assumed_numel(v.shape(), options.assumed_dim) < assumed_numel(node.shape, options.assumed_dim);
      });
      bool reordered = c && std::any_of(views[i].begin(), views[i].end(), [&](const View& v) { return reorders(v); });
      if ((r && views[i].size() >= 2) || (c && (uses[i] >= 2 || sliced || reordered))) {
        p.materialized[i] = true;
      } else if (c && padded[i]) {  // the contraction gets the buffer; its epilogue goes into the padded copy
        p.materialized[static_cast<size_t>(contraction[i])] = true;
        contraction[i] = -1;
      }
    }
  }

  // Cost of evaluating a node once, counting its inlined producers. An inlined
  // reduction counts 1 inside its consumers (it is computed once per point and
  // reused), but its own cost is a whole reduction.
  std::vector<double> subtree(n, 0);
  std::vector<bool> reads_data(n, false);  // a node whose value is a pure constant is rarely worth a buffer
  std::vector<bool> transcendental(n, false);  // a Log2, Exp2 or Sin among it and its inlined producers
  LowerOptions lower_options;
  lower_options.assumed_dim = options.assumed_dim;
  KernelCounts counts(n);
  std::vector<double> own_cost(n);
  for (size_t i = 0; i < n; ++i) own_cost[i] = op_cost(graph.nodes()[i]) + rounding_cost(graph, graph.nodes()[i]);
  std::vector<bool> lowered(n, false);
  // A function of a 0/1 value computed from indices (log2(1 - mask): -inf
  // where masked, ops::neg_inf_where) is a select in disguise, not a
  // transcendental worth a buffer; its known region serves the consumer.
  KnownRegions known(graph);
  std::vector<bool> own_transcendental(n, false);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = graph.nodes()[i];
    if (node.op != Op::Log2 && node.op != Op::Exp2 && node.op != Op::Sin) continue;
    Known k = known.through(node.inputs[0], loop_indices(node.shape));
    own_transcendental[i] = !(k.exact.defined() && k.exact.lo() >= 0 && k.exact.hi() <= 1);
  }
  for (int round = 0; round < 64; ++round) {
    p.rounds = round + 1;
    for (size_t i = 0; i < n; ++i) {
      const Node& node = graph.nodes()[i];
      double c = own_cost[i];
      bool data = node.op == Op::Input;
      bool heavy = own_transcendental[i];
      for (const Edge& e : node.inputs) {
        auto in = static_cast<size_t>(e.node);
        data = data || reads_data[in] || p.materialized[in];
        if (p.materialized[in]) continue;
        heavy = heavy || transcendental[in];
        bool loop_reduce = is_reduce(graph.nodes()[in].op) && !is_small_reduce(graph.nodes()[in]);
        c += loop_reduce ? 1 : subtree[in];
      }
      if (is_reduce(node.op)) {
        c = (c + 1) * assumed_numel({node.inputs[0].view.shape()[static_cast<size_t>(node.axis)]}, options.assumed_dim);
      }
      subtree[i] = c;
      reads_data[i] = data;
      transcendental[i] = heavy;
    }
    // Only kernels that inlined a node materialised last round change.
    std::vector<double> evaluations(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (!p.materialized[i] || graph.nodes()[i].op == Op::Input) continue;
      bool stale = !lowered[i];
      for (const auto& [j, count] : counts[i]) stale = stale || p.materialized[j];
      if (stale) {
        auto t0 = std::chrono::steady_clock::now();
        LoweredKernel k = lower(graph, static_cast<NodeId>(i), p.materialized, Schedule(graph.nodes()[i].shape), "k",
                                lower_options);
        counts[i].clear();
        for (size_t j = 0; j < n; ++j) {
          if (k.evaluations[j] > 0 && j != i) counts[i].emplace_back(j, k.evaluations[j]);
        }
        lowered[i] = true;
        if (debug_enabled("fusion")) {
          std::fprintf(stderr, "round %d lower %zu (%s) %.3f s\n", round, i, op_name(graph.nodes()[i].op),
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
      }
      for (const auto& [j, count] : counts[i]) evaluations[j] += count;
    }
    // Offenders: recomputed too often for their cost.
    std::vector<bool> offender(n, false);
    for (size_t i = n; i-- > 0;) {
      if (p.materialized[i] || evaluations[i] == 0) continue;
      // A value computed from indices alone is cheaper to recompute than to
      // read, unless it takes a transcendental and is no mask (masks keep
      // their known regions inline, known_region.h): rotary embeddings'
      // sin(position * frequency), read once per head.
      if (!reads_data[i] && (!transcendental[i] || subtree[i] < kWorthABuffer)) continue;
      double factor = evaluations[i] / assumed_numel(graph.nodes()[i].shape, options.assumed_dim);
      offender[i] = factor > options.min_recompute && (factor - 1) * subtree[i] > options.max_extra_work;
      // f16/bf16 widened to f32 is exact and free on load: a buffer of it would
      // double the bytes read. The half-precision value beneath gets the
      // buffer instead (the operands a bf16 matmul reads as bf16 pairs).
      const Node& node = graph.nodes()[i];
      DType from = node.op == Op::Cast ? graph.node(node.inputs[0].node).dtype : node.dtype;
      if (node.op == Op::Cast && node.dtype == DType::F32 && (from == DType::F16 || from == DType::BF16)) offender[i] = false;
    }
    // Materialise offenders that no other offender inlines (the outermost ones).
    std::vector<bool> inside_offender(n, false);
    for (size_t i = n; i-- > 0;) {
      if (!offender[i] && !inside_offender[i]) continue;
      for (const Edge& e : graph.nodes()[i].inputs) {
        if (!p.materialized[static_cast<size_t>(e.node)]) inside_offender[static_cast<size_t>(e.node)] = true;
      }
    }
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (offender[i] && !inside_offender[i]) {
        p.materialized[i] = true;
        changed = true;
      }
    }
    if (!changed) break;
  }
  fold_repeated_epilogues(graph, outputs, lower_options, p, counts);
  // Each kernel's work from its last lowering (up to date unless the rounds ran out).
  // A reduction adds one op per element it reduces.
  auto ops = [&](size_t j) {
    const Node& node = graph.nodes()[j];
    if (!is_reduce(node.op)) return own_cost[j];
    return assumed_numel({node.inputs[0].view.shape()[static_cast<size_t>(node.axis)]}, options.assumed_dim);
  };
  p.ops_per_element.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!p.materialized[i] || graph.nodes()[i].op == Op::Input) continue;
    double work = 0;
    for (const auto& [j, count] : counts[i]) work += count * ops(j);
    p.ops_per_element[i] = ops(i) + work / assumed_numel(graph.nodes()[i].shape, options.assumed_dim);
  }
  for (size_t i = 0; i < n; ++i) {
    if (p.materialized[i] && graph.nodes()[i].op != Op::Input) p.kernels.push_back(static_cast<NodeId>(i));
  }
  return p;
}

}  // namespace lumen::kernel
