#include "lumen/kernel/schedule_space.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/affine_range.h"
#include "lumen/kernel/known_region.h"
#include "lumen/kernel/lower.h"

// kernel_facts (schedule_space.h): what the schedule space needs to know about one kernel, read off its plain lowering.

namespace lumen::kernel {

namespace {

double assumed(const Expr& e) {
  Bindings b;
  for (const Expr& v : expr_vars(e)) b[v.name()] = 64;
  return static_cast<double>(evaluate(e, b));
}

bool mentions(const std::vector<Expr>& vars, const Expr& v) { return std::find(vars.begin(), vars.end(), v) != vars.end(); }

// Calls on_loop for every loop (before its body) and on_load for every load
// of a kernel, in statement order.
void walk_loads(const Kernel& k, const std::function<void(const Stmt&)>& on_loop,
                const std::function<void(const ValueNode&)>& on_load) {
  std::function<void(const Value&)> value = [&](const Value& v) {
    if (v->kind == ValueKind::Load) on_load(*v);
    for (const Value& a : v->args) value(a);
  };
  std::function<void(const Block&)> block = [&](const Block& b) {
    for (const Stmt& st : b) {
      if (st.kind == StmtKind::Loop) on_loop(st);
      if (st.value) value(st.value);
      if (st.kind == StmtKind::Loop) block(st.body);
    }
  };
  block(k.body);
}

int64_t linear_coefficient(const Expr& index, const Expr& var);

// The stride load_strides records for lanes walking memory downwards, one element each (a view
// flipped along a row): negative like every stride that is not SIMD, and told apart from the -1
// of an index the lane enters non-linearly. The CPU loads such lanes as one vector, reversed.
constexpr int64_t kReversedLanes = std::numeric_limits<int64_t>::min() / 2;

// How an index walks the lanes of `var` split into aligned vectors of
// `lanes` (var = o·lanes + l): the coefficient of l, or -1 if l enters it
// non-linearly. r / 32 is 0 over lanes of 16 (a per-block scale), r % 32 is 1
// (the elements of a packed quant block), (h + d / 32) % 9 · 64 + d % 32 is 1
// over lanes of 16 (a rotary embedding's other half).
// `index` with `var` split into aligned vectors of `lanes` (var = o·lanes + l), and l.
std::pair<Expr, Expr> split_into_lanes(const Expr& index, const Expr& var, const Expr& extent, int64_t lanes) {
  Expr o = Expr::index(var.name() + "_vo", simplify((extent + (lanes - 1)) / lanes));
  Expr l = Expr::index(var.name() + "_vl", Expr(lanes));
  return {simplify(substitute(index, VarMap{{var, o * lanes + l}})), l};
}

int64_t stride_in_lanes(const Expr& index, const Expr& var, const Expr& extent, int64_t lanes) {
  auto [split, l] = split_into_lanes(index, var, extent, lanes);
  return linear_coefficient(split, l);
}

// Whether an index repeats each element over c consecutive lanes of `var` (c = 2, 4 or 8):
// a nearest upsampling by c read along its rows. The code generator loads such a vector as
// lanes / c elements, each repeated (lumen_load_f32_rep).
bool repeats_lanes(const Expr& index, const Expr& var, const Expr& extent, int64_t lanes) {
  auto [split, l] = split_into_lanes(index, var, extent, lanes);
  return lane_repeat(split, l, lanes) > 0;
}

}  // namespace

int64_t lane_repeat(const Expr& index, const Expr& lane, int64_t lanes) {
  Expr base = simplify(substitute(index, VarMap{{lane, Expr(0)}}));
  int64_t c = 0;
  for (int64_t l = 1; l < lanes; ++l) {
    Expr d = simplify(substitute(index, VarMap{{lane, Expr(l)}}) - base);
    if (!d.is_const()) return 0;
    if (c == 0 && d.value() == 1) c = l;
    if (d.value() != (c ? l / c : 0)) return 0;
  }
  return c == 2 || c == 4 || c == 8 ? c : 0;
}

namespace {

// `index` with each clamp of a term into fixed bounds, min(x, b) or max(x, b)
// with b free of loop variables, replaced by x: how the lanes walk memory
// where the clamp does not bite (a row's overhanging last vector, a padded
// view's coordinate clamped into its mask; the CPU masks the other lanes).
Expr without_clamps(const Expr& index) {
  if (!index.defined()) return index;
  switch (index.kind()) {
    case ExprKind::Min:
    case ExprKind::Max:
      if (expr_vars(index.b()).empty()) return without_clamps(index.a());
      if (expr_vars(index.a()).empty()) return without_clamps(index.b());
      return index;
    case ExprKind::Add:
    case ExprKind::Mul: return make_binary(index.kind(), without_clamps(index.a()), without_clamps(index.b()));
    default: return index;
  }
}

// `index` where `valid` holds: each loop variable whose range the condition
// cuts below its loop's extent (r < past of a concatenation's first part) is
// seen over that range, so a coordinate read through a dynamic shape
// (r % past, (64 r + i) / (64 past)) is the variable itself, as it is in the
// split loops the kernel runs.
Expr narrowed_by(const Expr& index, const Expr& valid, const std::map<std::string, Expr>& extents) {
  if (!valid.defined() || valid.is_const()) return index;
  Expr predicate = as_predicate(valid);
  VarMap at;
  for (const Expr& var : expr_vars(index)) {
    auto it = extents.find(var.name());
    VarRange r = range_of(predicate, var);
    if (it == extents.end() || !r.hi.defined() || (r.lo.defined() && !r.lo.is_const(0))) continue;
    if (simplify(r.hi - it->second).is_const(0)) continue;
    at.emplace(var, Expr::index(var.name(), r.hi));
  }
  return at.empty() ? index : simplify(substitute(index, at));
}

// For each loop variable, the coefficients it has in load indices (over aligned
// vectors of `lanes`, where the index is not linear in it).
std::map<std::string, std::vector<int64_t>> load_strides(const Kernel& k, int64_t lanes) {
  std::map<std::string, std::vector<int64_t>> by_var;
  std::map<std::string, Expr> extents;  // loop variables' extents by name
  walk_loads(
      k, [&](const Stmt& loop) { extents[loop.var.name()] = loop.extent; },
      [&](const ValueNode& load) {
        if (load.valid.defined() && load.valid.is_const(0)) return;  // in a branch that reads nothing (padding)
        Expr index = narrowed_by(without_clamps(load.index), load.valid, extents);
        auto form = LinearForm::of(index);
        if (!form) return;
        for (const auto& [term, c] : form->terms) {
          if (term.kind() == ExprKind::Var) {
            by_var[term.name()].push_back(c == -1 ? kReversedLanes : c);
            continue;
          }
          for (const Expr& var : expr_vars(term)) {
            auto it = extents.find(var.name());
            int64_t stride = it == extents.end() ? -1 : stride_in_lanes(index, var, it->second, lanes);
            // Repeated lanes of an output loop walk memory within a vector's reach (counted as 2:
            // SIMD, not unit).
            if (stride < 0 && it != extents.end() && var.name()[0] == 'i' &&
                repeats_lanes(index, var, it->second, lanes)) {
              stride = 2;
            }
            by_var[var.name()].push_back(stride);
          }
        }
      });
  return by_var;
}

// The n of every r / n and r % n a load index takes of a reduction variable r
// whose extent n divides (what reduce_split can turn into loop variables).
// The reduction loops' extents, by variable.
std::map<std::string, Expr> reduction_extents(const Kernel& k) {
  std::map<std::string, Expr> extents;
  walk_loads(
      k, [&](const Stmt& loop) { if (loop.var.name()[0] == 'r') extents[loop.var.name()] = loop.extent; },
      [](const ValueNode&) {});
  return extents;
}

std::vector<int64_t> reduce_divisors(const Kernel& k) {
  const std::map<std::string, Expr> extents = reduction_extents(k);
  std::vector<int64_t> out;
  std::function<void(const Expr&)> expr = [&](const Expr& e) {
    if (!e.defined() || e.kind() == ExprKind::Var || e.kind() == ExprKind::Const) return;
    if ((e.kind() == ExprKind::Div || e.kind() == ExprKind::Mod) && e.a().kind() == ExprKind::Var && e.b().is_const()) {
      auto it = extents.find(e.a().name());
      int64_t n = e.b().value();
      if (it != extents.end() && n > 1 && n <= kMaxReduceSplit && known_factor(it->second) % n == 0 &&
          std::find(out.begin(), out.end(), n) == out.end()) {
        out.push_back(n);
      }
    }
    expr(e.a());
    expr(e.b());
    expr(e.c());
  };
  walk_loads(
      k, [](const Stmt&) {},
      [&](const ValueNode& load) {
        expr(load.index);
        expr(load.valid);
      });
  std::sort(out.begin(), out.end());
  return out;
}

// The largest n of reduce_splits with lanes / 4 < n <= lanes after which every load walks
// the inner part i of r = o·n + i with stride 0 or 1, and one walks it with stride 1. 0: none.
int64_t split_lanes(const Kernel& k, const std::vector<int64_t>& splits, int64_t lanes) {
  for (auto it = splits.rbegin(); it != splits.rend(); ++it) {
    int64_t n = *it;
    if (!lanes_over_split(n, lanes)) continue;
    bool ok = true, walks = false;
    std::map<std::string, Expr> extents;
    walk_loads(
        k, [&](const Stmt& loop) { extents[loop.var.name()] = loop.extent; },
        [&](const ValueNode& load) {
          for (const Expr& v : expr_vars(load.index)) {
            if (v.name().empty() || v.name()[0] != 'r' || !extents.count(v.name())) continue;
            Expr o = Expr::index(v.name() + "_so", simplify(extents[v.name()] / n));
            Expr i = Expr::index(v.name() + "_si", Expr(n));
            int64_t c = linear_coefficient(simplify(substitute(load.index, VarMap{{v, o * n + i}})), i);
            if (c != 0 && c != 1) ok = false;
            walks = walks || c == 1;
          }
        });
    if (ok && walks) return n;
  }
  return 0;
}

// The period of the digits (r / d) % m (d a multiple of `lanes`, d·m at most
// kMaxLaneChunks vectors) that load indices and masks take of a reduction
// variable r: lanes spanning it see each digit as a constant. 0: none.
int64_t lane_period(const Kernel& k, int64_t lanes) {
  int64_t period = 0;
  std::function<void(const Expr&)> expr = [&](const Expr& e) {
    if (!e.defined() || e.kind() == ExprKind::Var || e.kind() == ExprKind::Const) return;
    if (e.kind() == ExprKind::Mod && e.b().is_const() && e.a().kind() == ExprKind::Div && e.a().a().kind() == ExprKind::Var &&
        e.a().a().name()[0] == 'r' && e.a().b().is_const()) {
      int64_t d = e.a().b().value(), m = e.b().value();
      if (d % lanes == 0 && m > 1 && d * m <= kMaxLaneChunks * lanes) period = std::max(period, d * m);
    }
    expr(e.a());
    expr(e.b());
    expr(e.c());
  };
  walk_loads(k, [](const Stmt&) {}, [&](const ValueNode& load) {
    expr(load.index);
    expr(load.valid);
  });
  return period;
}

// An output dim (not the last, static, longer than 1) that the reduction's
// loads along the last dim never index, while some other reduction load does:
// outputs along it share each vector those loads read (a pointwise conv's
// output channels share its input rows). The innermost such dim; -1: none.
int shared_row_dim(const Kernel& k, const Shape& shape) {
  int rank = static_cast<int>(shape.size());
  std::vector<std::vector<Expr>> reduction_loads;  // the variables of each load inside a reduction
  walk_loads(k, [](const Stmt&) {}, [&](const ValueNode& load) {
    std::vector<Expr> vars = expr_vars(load.index);
    bool in_reduction = std::any_of(vars.begin(), vars.end(), [](const Expr& v) { return v.name()[0] == 'r'; });
    if (in_reduction) reduction_loads.push_back(vars);
  });
  auto named = [&](const std::vector<Expr>& vars, const std::string& name) {
    return std::any_of(vars.begin(), vars.end(), [&](const Expr& v) { return v.name() == name; });
  };
  std::string last = "i" + std::to_string(rank - 1);
  for (int d = rank - 2; d >= 0; --d) {
    const Expr& extent = shape[static_cast<size_t>(d)];
    if (!extent.is_const() || extent.value() < 2) continue;
    std::string var = "i" + std::to_string(d);
    bool vectors_shared = true, some_reads = false;
    for (const std::vector<Expr>& vars : reduction_loads) {
      if (!named(vars, var)) continue;
      if (named(vars, last)) {
        vectors_shared = false;
      } else {
        some_reads = true;
      }
    }
    if (vectors_shared && some_reads) return d;
  }
  return -1;
}

// How many loads a kernel makes: each load times the extents of its loops
// (dynamic extents taken as 64).
double load_count(const Kernel& k) {
  std::function<double(const Block&)> block = [&](const Block& b) {
    double n = 0;
    for (const Stmt& st : b) {
      if (st.value) {
        std::function<double(const Value&)> value = [&](const Value& v) {
          double c = v->kind == ValueKind::Load ? 1 : 0;
          for (const Value& a : v->args) c += value(a);
          return c;
        };
        n += value(st.value);
      }
      if (st.kind == StmtKind::Loop) n += assumed(st.extent) * block(st.body);
    }
    return n;
  };
  return block(k.body);
}

// Every load ignores `var` or walks it with unit stride, and one walks it.
// Whether some reduction walks bytes four at a time (8-bit loads with coefficient 4 on its
// variable, every other load of it linear with coefficient 0, 1 or 4, or not linear in it: a
// block's scale r / c): the int8 dot products of lumen/compiler/int8_dot.h, where SIMD lanes
// along the reduction are lanes of vpdpbusd.
bool byte_group_reduction(const Kernel& k) {
  std::map<std::string, bool> bytes, other;  // per reduction variable: a byte load at 4; a load it disqualifies
  walk_loads(
      k, [](const Stmt&) {},
      [&](const ValueNode& load) {
        auto form = LinearForm::of(load.index);
        if (!form) return;
        for (const auto& [term, c] : form->terms) {
          if (term.kind() != ExprKind::Var || term.name().empty() || term.name()[0] != 'r') continue;
          bool is_byte = load.dtype == DType::I8 || load.dtype == DType::U8;
          if (is_byte && c == 4) bytes[term.name()] = true;
          else if (c != 0 && c != 1 && c != 4) other[term.name()] = true;
        }
      });
  for (const auto& [var, found] : bytes) {
    if (found && !other.count(var)) return true;
  }
  return false;
}

// Whether `var`, cut into parts of `split`, reads bytes four at a time along a part (a byte load's
// index has coefficient 4 in the part's lane) and no load strides along it otherwise (coefficients
// 0 or 1): an int8 dot product whose SIMD lanes are a weight's rows, stored `split` rows interleaved
// four bytes a row (lumen/compiler/int8_dot.h): its index is (n / split, n % split) of the row n.
// (Unlike stride_in_lanes, a term the lane enters non-linearly, l / 32 of a block's value read by
// an embedding fused in front, counts as no stride: it is constant in each vector of the part.)
bool byte_lanes_along(const Kernel& k, const std::string& var, int64_t split) {
  Expr outer = Expr::index(var + "_o", Expr(int64_t{1} << 30)), lane = Expr::index(var + "_l", Expr(split));
  bool bytes = false, other = false;
  walk_loads(
      k, [](const Stmt&) {},
      [&](const ValueNode& load) {
        Expr index = load.index;
        for (const Expr& v : expr_vars(index)) {
          if (v.kind() == ExprKind::Var && v.name() == var) {
            std::unordered_map<Expr, Expr, ExprHash> at{{v, outer * split + lane}};
            index = simplify(substitute(index, at));
          }
        }
        auto form = LinearForm::of(index);
        if (!form) {
          other = other || mentions(expr_vars(index), lane);
          return;
        }
        for (const auto& [term, c] : form->terms) {
          if (!(term == lane)) continue;
          bool is_byte = load.dtype == DType::I8 || load.dtype == DType::U8;
          if (is_byte && c == 4) bytes = true;
          else if (c != 0 && c != 1) other = true;
        }
      });
  return bytes && !other;
}

// Every load walks `var` with a stride from 0 to `widest` and some load walks it. Widest 1: unit
// stride. Widest 4: SIMD lanes along it may also load 2 to 4 elements apart (a stride-2
// convolution's window rows, a subsampled view: the CPU's lumen_load_f32_strided); larger
// strides are transposes (`block`).
// Whether loads along `var` walk memory in vectors, some of them downwards (kReversedLanes) and
// the rest within 4 elements a lane.
bool reversed_lanes(const std::map<std::string, std::vector<int64_t>>& strides, const std::string& var) {
  auto it = strides.find(var);
  if (it == strides.end()) return false;
  bool any = false;
  for (int64_t c : it->second) {
    if (c == kReversedLanes) {
      any = true;
    } else if (c < 0 || c > 4) {
      return false;
    }
  }
  return any;
}

bool walks_within(const std::map<std::string, std::vector<int64_t>>& strides, const std::string& var, int64_t widest) {
  auto it = strides.find(var);
  if (it == strides.end()) return false;
  bool any = false;
  for (int64_t c : it->second) {
    if (c < 0 || c > widest) return false;
    any = any || c > 0;
  }
  return any;
}

bool unit_stride(const std::map<std::string, std::vector<int64_t>>& strides, const std::string& var) {
  return walks_within(strides, var, 1);
}

// How an operand's index depends on a variable: its coefficient if linear, -1 if not.
int64_t linear_coefficient(const Expr& index, const Expr& var) {
  auto form = LinearForm::of(index);
  if (!form) return -1;
  int64_t coefficient = 0;
  for (const auto& [term, c] : form->terms) {
    if (term == var) {
      coefficient = c;
    } else if (mentions(expr_vars(term), var)) {
      return -1;
    }
  }
  return coefficient;
}

// How many distinct elements an operand's index reads over the loops `probe`
// of `shape`: the product of the extents its variables take, a variable seen
// only as v / c counting extent / c (grouped-query heads: h / 3).
double distinct_reads(const Expr& index, const std::vector<Expr>& probe, const Shape& shape) {
  double n = 1;
  for (size_t d = 0; d < probe.size(); ++d) {
    const Expr& v = probe[d];
    int64_t divisor = 0;  // 0: not seen; -1: seen bare
    std::function<void(const Expr&)> visit = [&](const Expr& e) {
      if (!e.defined()) return;
      if (e.kind() == ExprKind::Div && e.a() == v && e.b().is_const() && e.b().value() > 0) {
        divisor = divisor == 0 ? e.b().value() : divisor == e.b().value() ? divisor : -1;
        return;
      }
      if (e == v) {
        divisor = -1;
        return;
      }
      visit(e.a());
      visit(e.b());
      visit(e.c());
    };
    visit(index);
    if (divisor == 0) continue;
    double extent = assumed(shape[d]);
    n *= divisor > 0 ? std::max(1.0, extent / static_cast<double>(divisor)) : extent;
  }
  return std::max(n, 1.0);
}

}  // namespace

KernelFacts kernel_facts(const Graph& graph, NodeId node, const std::vector<bool>& materialized, const Target& target) {
  KernelFacts f;
  const Node& n = graph.node(node);
  f.node = node;
  f.shape = n.shape;
  f.lanes = target.f32_lanes;
  f.threads = target.threads;
  f.l2_bytes = target.l2_bytes;
  f.gpu = target.gpu;
  // f32 values, and f32 values rounded to bf16/f16 as they are stored (the
  // precision pass's operand of the next contraction, fused as an epilogue):
  // both are computed in f32 SIMD lanes.
  bool rounded = n.op == Op::Cast && (n.dtype == DType::BF16 || n.dtype == DType::F16) &&
                 graph.node(n.inputs[0].node).dtype == DType::F32;
  f.f32 = n.dtype == DType::F32 || rounded;
  f.numel = 1;
  for (const Expr& d : n.shape) f.numel *= assumed(d);
  LoweredKernel plain = lower(graph, node, materialized, Schedule(n.shape), "probe");
  for (double e : plain.evaluations) f.work += e;
  auto strides = load_strides(plain.kernel, f.lanes);
  f.loads = load_count(plain.kernel);
  for (NodeId b : plain.buffer_nodes) {
    if (b >= 0 && graph.node(b).op == Op::Input && graph.node(b).parameter) f.reads_parameter = true;
  }
  const std::map<std::string, Expr> reduce_extents = reduction_extents(plain.kernel);
  for (const auto& [var, coefs] : strides) {
    if (var.size() < 2 || var[0] != 'r' || !unit_stride(strides, var)) continue;
    f.unit_reduce = true;
    auto it = reduce_extents.find(var);
    int64_t factor = it == reduce_extents.end() ? 0 : known_factor(it->second);
    f.unit_reduce_extent = f.unit_reduce_extent == 0 ? factor : std::min(f.unit_reduce_extent, factor);
  }
  f.byte_groups = byte_group_reduction(plain.kernel);
  if (f.byte_groups) f.unit_reduce = true;
  if (NodeId r = outer_reduction_of(graph, node, materialized); r >= 0) {
    const Node& reduction = graph.node(r);
    f.rfactor_extent = known_factor(reduction.inputs[0].view.shape()[static_cast<size_t>(reduction.axis)]);
  }
  int rank = static_cast<int>(n.shape.size());
  if (rank == 0) return f;
  std::string last_var = "i" + std::to_string(rank - 1);
  const Expr& last = n.shape.back();
  int64_t last_factor = known_factor(last);  // dynamic extents such as 16*blocks count by their factor
  // (i8 outputs too: a quantized activation's bytes, stored 16 lanes at a time.)
  bool last_ok = (f.f32 || n.dtype == DType::I8) && last_factor > 0 && last_factor % f.lanes == 0;
  // A last dim the lanes do not divide (a row of past + 1 scores, ViT's 197 positions) is SIMD
  // too when it is dynamic or longer than a quarter vector: its last (or only) vector overhangs
  // the row's end, masked (mobilenet_v3_small's 14- and 7-wide rows).
  bool overhangs = f.f32 && !last_ok && masked_row_is_simd(last, f.lanes);
  f.byte_rows = f.f32 && last_factor > 0 && last_factor % (4 * f.lanes) == 0 && byte_lanes_along(plain.kernel, last_var, 4 * f.lanes);
  bool walkable = walks_within(strides, last_var, 4) || !strides.count(last_var) || reversed_lanes(strides, last_var);
  f.vector_last = (last_ok || overhangs) && (walkable || f.byte_rows);
  auto strided = [&](const std::string& var) {
    auto it = strides.find(var);
    return it != strides.end() && std::any_of(it->second.begin(), it->second.end(), [](int64_t c) { return c < 0 || c > 1; });
  };
  if (strided(last_var) && !f.byte_rows) {
    for (int d = rank - 2; d >= 0 && f.transposed_dim < 0; --d) {
      auto it = strides.find("i" + std::to_string(d));
      if (it != strides.end() && std::count(it->second.begin(), it->second.end(), 1) > 0) f.transposed_dim = d;
    }
  }
  f.reduce_splits = reduce_divisors(plain.kernel);
  f.split_lanes = split_lanes(plain.kernel, f.reduce_splits, f.lanes);
  f.lane_period = lane_period(plain.kernel, f.lanes);
  f.shared_row_dim = shared_row_dim(plain.kernel, n.shape);
  f.contraction = contraction_of(graph, node, materialized);
  f.row_dim = rank - 2;
  for (int d = rank - 2; d >= 0; --d) {
    if (!n.shape[static_cast<size_t>(d)].is_const(1)) {
      f.row_dim = d;
      break;
    }
  }
  // A static N the lanes do not divide (ViT's 197 keys, Whisper's 1,500 frames, a 51,865-token LM
  // head) takes a tile too on a CPU when an operand is packed: the panels past N hold zeros and the
  // last tile's stores are masked.
  bool overhang_tile = overhangs && !target.gpu && last.is_const() && last.value() >= 2 * f.lanes;
  if (f.contraction < 0 || rank < 2 || !(last_ok || overhang_tile)) return f;
  // Which operand of the product to pack: one that varies along n and k but is
  // not already contiguous along n with close reduction rows (B of a row-major
  // matmul at large N, transposed weights, convolution windows).
  const Node& r = graph.node(f.contraction);
  const Node& product = graph.node(r.inputs[0].node);
  f.one_sum_axis = product.shape.size() == n.shape.size() + 1;
  std::vector<Expr> probe = loop_indices(product.shape);
  auto k_dim = static_cast<size_t>(r.axis);
  f.contraction_extent = known_factor(product.shape[k_dim]);
  f.contraction_static = product.shape[k_dim].is_const();
  size_t n_dim = product.shape.size() - 1 == k_dim ? product.shape.size() - 2 : product.shape.size() - 1;
  bool all_friendly = true;
  auto widened_bf16 = [&](const Edge& e) {
    const Node& x = graph.node(e.node);
    return x.op == Op::Cast && x.dtype == DType::F32 && graph.node(x.inputs[0].node).dtype == DType::BF16;
  };
  bool bf16_pairs = target.bf16_dot && product.op == Op::Mul && widened_bf16(product.inputs[0]) &&
                    widened_bf16(product.inputs[1]) && known_factor(product.shape[k_dim]) % 2 == 0;
  // A weight read as bf16 pairs: its pack reads only the parameter, so it is
  // made once and kept between runs — worth it even when each run reads it
  // once (a decode step's matrix-vector product then streams half the bytes).
  auto kept_weight = [&](const Edge& e) {
    if (!bf16_pairs) return false;  // (so e is a widening cast)
    const Node& bf16 = graph.node(graph.node(e.node).inputs[0].node);
    const Node& source = bf16.op == Op::Cast ? graph.node(bf16.inputs[0].node) : bf16;
    return source.op == Op::Input && source.parameter;
  };
  for (int j = 0; j < 2; ++j) {
    Expr index = product.inputs[static_cast<size_t>(j)].view.index(probe).index;
    std::vector<Expr> used = expr_vars(index);
    if (!mentions(used, probe[n_dim])) continue;  // broadcast along n (A): read as scalars
    int64_t coef_n = linear_coefficient(index, probe[n_dim]), coef_k = linear_coefficient(index, probe[k_dim]);
    bool friendly = coef_n == 1 && coef_k >= 0 && coef_k < 64;
    if (!friendly) all_friendly = false;
    // How often each element of the operand is read: a panel packed once is
    // worth it when read many times (B of a matmul: M times), not for a decode
    // step's values, read by the few query heads that share a key/value head.
    double points = 1;
    for (const Expr& d : product.shape) points *= assumed(d);
    double reuse = points / distinct_reads(index, probe, product.shape);
    bool kept = kept_weight(product.inputs[static_cast<size_t>(j)]);
    if (!friendly && mentions(used, probe[k_dim]) && (reuse >= 8 || kept) && f.pack_operand < 0) f.pack_operand = j;
  }
  f.tileable = f.pack_operand >= 0 || (last_ok && all_friendly && unit_stride(strides, last_var));
  f.tile_overhangs = f.tileable && !last_ok;
  f.pair_dot = bf16_pairs && f.pack_operand >= 0 && last_ok;  // (bf16 pair panels hold no zeros past N)
  return f;
}

}  // namespace lumen::kernel
