#include "lumen/kernel/heuristic.h"

#include <algorithm>
#include <functional>
#include <map>

#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/kernel/lower.h"

namespace lumen::kernel {

namespace {

double assumed(const Expr& e) {
  Bindings b;
  for (const Expr& v : expr_vars(e)) b[v.name()] = 64;
  return static_cast<double>(evaluate(e, b));
}

// How the kernel's loads move when one loop variable steps by one: for each
// variable, the set of coefficients it has in load indices.
struct Strides {
  std::map<std::string, std::vector<int64_t>> by_var;
  // True if every load either ignores `var` or walks it with unit stride, and one does.
  bool unit(const std::string& var) const {
    auto it = by_var.find(var);
    if (it == by_var.end()) return false;
    bool any = false;
    for (int64_t c : it->second) {
      if (c != 0 && c != 1) return false;
      any = any || c == 1;
    }
    return any;
  }
};

Strides load_strides(const Kernel& k) {
  Strides s;
  std::function<void(const Value&)> value = [&](const Value& v) {
    if (v->kind == ValueKind::Load) {
      auto form = LinearForm::of(v->index);
      if (form) {
        for (const auto& [term, c] : form->terms) {
          if (term.kind() == ExprKind::Var) s.by_var[term.name()].push_back(c);
          else
            for (const Expr& var : expr_vars(term)) s.by_var[var.name()].push_back(-1);  // non-linear
        }
      }
    }
    for (const Value& a : v->args) value(a);
  };
  std::function<void(const Block&)> block = [&](const Block& b) {
    for (const Stmt& st : b) {
      if (st.value) value(st.value);
      if (st.kind == StmtKind::Loop) block(st.body);
    }
  };
  block(k.body);
  return s;
}

double numel_except(const Shape& shape, int skip) {
  double n = 1;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d != skip) n *= assumed(shape[static_cast<size_t>(d)]);
  }
  return n;
}

int64_t largest_divisor(int64_t n, std::initializer_list<int64_t> choices) {
  for (int64_t c : choices) {
    if (c <= n && n % c == 0) return c;
  }
  return 1;
}

}  // namespace

std::vector<Action> heuristic_actions(const Graph& graph, NodeId node, const std::vector<bool>& materialized,
                                      const Target& target) {
  const Node& n = graph.node(node);
  const Shape& shape = n.shape;
  std::vector<Action> actions;
  if (shape.empty()) return actions;
  int lanes = target.f32_lanes;
  int rank = static_cast<int>(shape.size());
  LoweredKernel plain = lower(graph, node, materialized, Schedule(shape), "probe");
  Strides strides = load_strides(plain.kernel);
  std::string last_var = "i" + std::to_string(rank - 1);
  const Expr& last = shape.back();
  bool f32 = n.dtype == DType::F32;

  Schedule s(shape);
  auto apply = [&](const Action& a) {
    s.apply(a);
    actions.push_back(a);
  };
  auto loop_of = [&](int dim, bool innermost) {
    int found = -1;
    for (size_t i = 0; i < s.loops().size(); ++i) {
      if (s.loops()[i].dim == dim) {
        found = static_cast<int>(i);
        if (!innermost) break;
      }
    }
    return found;
  };

  NodeId reduce = contraction_of(graph, node, materialized);  // matmul, conv, attention scores (+ epilogue)
  bool contraction = reduce >= 0;
  bool vector_last = f32 && last.is_const() && last.value() % lanes == 0 && (strides.unit(last_var) || !strides.by_var.count(last_var));
  // A contraction whose operands can be packed into panels along n: a tile
  // of MR rows x NR columns with the reduction inside.
  int pack_operand = -1;
  bool tile = false;
  if (contraction && rank >= 2 && f32 && last.is_const() && last.value() % lanes == 0) {
    const Node& r = graph.node(reduce);
    const Node& product = graph.node(r.inputs[0].node);
    std::vector<Expr> probe = loop_indices(product.shape);
    auto k_dim = static_cast<size_t>(r.axis);
    size_t n_dim = product.shape.size() - 1 == k_dim ? product.shape.size() - 2 : product.shape.size() - 1;
    double reuse = numel_except(shape, rank - 1);  // how often an operand panel is re-read
    bool all_unit = true;
    for (int j = 0; j < 2; ++j) {
      Expr index = product.inputs[static_cast<size_t>(j)].view.index(probe).index;
      std::vector<Expr> used = expr_vars(index);
      bool dep_n = std::find(used.begin(), used.end(), probe[n_dim]) != used.end();
      bool dep_k = std::find(used.begin(), used.end(), probe[k_dim]) != used.end();
      if (!dep_n) continue;  // the operand broadcast along n (A): read as scalars
      int64_t coef_n = -1, coef_k = -1;  // -1: not linear in that variable
      if (auto form = LinearForm::of(index)) {
        bool n_linear = true, k_linear = true;
        coef_n = coef_k = 0;
        for (const auto& [term, c] : form->terms) {
          if (term == probe[n_dim]) {
            coef_n = c;
          } else if (term == probe[k_dim]) {
            coef_k = c;
          } else {
            auto tv = expr_vars(term);
            if (std::find(tv.begin(), tv.end(), probe[n_dim]) != tv.end()) n_linear = false;
            if (std::find(tv.begin(), tv.end(), probe[k_dim]) != tv.end()) k_linear = false;
          }
        }
        if (!n_linear) coef_n = -1;
        if (!k_linear) coef_k = -1;
      }
      // Already contiguous along n with reduction rows close together: read in place.
      bool friendly = coef_n == 1 && coef_k >= 0 && coef_k < 64;
      if (!friendly) all_unit = false;
      if (!friendly && dep_k && reuse >= 8 && pack_operand < 0) pack_operand = j;
    }
    tile = pack_operand >= 0 || (all_unit && strides.unit(last_var));
  }
  if (tile) {
    // Register tile: MR rows (unrolled) × NR columns (SIMD), the reduction inside.
    const Expr& m = shape[static_cast<size_t>(rank - 2)];
    int64_t mr = m.is_const() ? largest_divisor(m.value(), {6, 4, 3, 2}) : 1;
    int64_t nr = largest_divisor(last.value(), {4 * static_cast<int64_t>(lanes), 2 * static_cast<int64_t>(lanes), lanes});
    if (pack_operand >= 0) apply(Action::pack(pack_operand, nr));
    if (nr < last.value()) apply(Action::split(loop_of(rank - 1, false), nr));
    if (mr > 1 && mr < m.value()) apply(Action::split(loop_of(rank - 2, false), mr));
    // Order [.., n_o, m_o, m_i, n_i]: the B panel of n_o stays in cache across m_o,
    // and the register tile (m_i x n_i) is innermost.
    if (nr < last.value() && loop_of(rank - 1, false) > loop_of(rank - 2, false)) {
      apply(Action::reorder(loop_of(rank - 1, false), loop_of(rank - 2, false)));
    }
    int m_inner = loop_of(rank - 2, true), n_inner = loop_of(rank - 1, true);
    if (mr > 1 && m_inner != n_inner - 1) apply(Action::reorder(m_inner, n_inner - 1));
    apply(Action::set_kind(loop_of(rank - 1, true), LoopKind::Vector));  // innermost first: lanes nest inward
    if (mr > 1) apply(Action::set_kind(loop_of(rank - 2, true), LoopKind::Unroll));
  } else {
    if (vector_last) {
      int l = loop_of(rank - 1, true);
      if (last.value() > lanes) apply(Action::split(l, lanes));
      apply(Action::set_kind(loop_of(rank - 1, true), LoopKind::Vector));
    }
    bool reduces = false;
    for (const auto& [var, coefs] : strides.by_var) {
      if (var.size() > 1 && var[0] == 'r' && strides.unit(var)) reduces = true;
    }
    if (reduces) apply(Action::reduce_lanes(lanes));
  }

  // Parallelise the outermost loop with more than one iteration, if the kernel is big enough.
  double numel = 1;
  for (const Expr& d : shape) numel *= assumed(d);
  double work = 0;
  for (double e : plain.evaluations) work += e;
  if (target.threads > 1 && (numel >= 4096 || work >= 65536)) {
    for (size_t i = 0; i < s.loops().size(); ++i) {
      const LoopDef& l = s.loops()[i];
      if (l.kind != LoopKind::Serial) break;
      if (l.extent.is_const() && l.extent.value() < 2) continue;
      try {
        Schedule trial = s;
        if (i != 0) trial.apply(Action::reorder(static_cast<int>(i), 0));
        trial.apply(Action::set_kind(0, LoopKind::Parallel));
        if (i != 0) actions.push_back(Action::reorder(static_cast<int>(i), 0));
        actions.push_back(Action::set_kind(0, LoopKind::Parallel));
        s = trial;
      } catch (const Error&) {
      }
      break;
    }
  }
  return actions;
}

}  // namespace lumen::kernel
