#include "lumen/compiler/int8_dot.h"

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "lumen/backend/interp/point_evaluator.h"
#include "lumen/core/array.h"
#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/core/tensor.h"

namespace lumen::compiler {

namespace {

constexpr int64_t kBlock = 32;  // elements per scale: the formats rewritten here
constexpr double kMaxRows = 8;   // activation rows of a contraction rewritten (decode: 1)
constexpr int64_t kRowLanes = 64;  // weight rows interleaved for kernels whose SIMD lanes are rows (4 vectors)

// How a weight's quants sit in its byte array.
enum class Form {
  Signed,    // i8 q [N, K]: q·d (Q8_0, Q5_0)
  Unsigned,  // u8 q [N, K]: q·d + m (Q5_1, Q5_K)
  Nibbles,   // u8 [N, K/2], two quants a byte in groups of 2·half: (q - 8)·d, or q·d + m (Q4_0, Q4_1, Q4_K)
  SixBit,    // Q6_K's quarters (WeightFormat::Q6_K): low nibbles u8 [N, 2, K/4], bit pairs u8 [N, K/4]: (q - 32)·d
};

struct Format {
  Form form;
  int64_t half = 0;  // Nibbles: byte j of a group holds element j (low) and half + j (high)
  bool mins = false;
  int64_t scale_block = kBlock;  // elements per weight scale: 32, or 16 (Q6_K)
  // What making the weight quants unsigned added (Σ u·q - offset·Σq takes it back): 128 for i8
  // quants, 8 for nibbles without mins (q - 8), 32 for six-bit quants, 0 where a min carries the offset.
  int64_t offset() const {
    if (form == Form::SixBit) return 32;
    return form == Form::Signed ? 128 : form == Form::Nibbles && !mins ? 8 : 0;
  }
  // Chains of weight bytes a row splits into (each read against the activation's bytes in its order):
  // nibbles the low and the high ones, six-bit quants the four quarters.
  int chains() const { return form == Form::Nibbles ? 2 : form == Form::SixBit ? 4 : 1; }
  // Bytes of a chain in a row of k quants.
  int64_t chain_bytes(int64_t k) const { return form == Form::Nibbles ? k / 2 : form == Form::SixBit ? k / 4 : k; }
  std::string name() const {
    if (form == Form::SixBit) return "Q6_K form";
    if (form == Form::Signed) return "Q8_0 form";
    if (form == Form::Unsigned) return "Q5_1 form";
    return half == 16 ? (mins ? "Q4_1 form" : "Q4_0 form") : "Q4_K form";
  }
};

struct QuantParams {
  NodeId q = -1, scales = -1, mins = -1, high = -1;  // high: Q6_K's bit pairs (`base.qh`)
};

// Parameters named `base.q` / `.scales` / `.mins`, by base.
std::map<std::string, QuantParams> quant_params(const Graph& g) {
  std::map<std::string, QuantParams> out;
  for (NodeId id : g.input_ids()) {
    const Node& n = g.node(id);
    if (!n.parameter) continue;
    auto dot = n.name.rfind('.');
    if (dot == std::string::npos) continue;
    std::string base = n.name.substr(0, dot), suffix = n.name.substr(dot + 1);
    if (suffix == "q") out[base].q = id;
    else if (suffix == "scales") out[base].scales = id;
    else if (suffix == "mins") out[base].mins = id;
    else if (suffix == "qh") out[base].high = id;
  }
  return out;
}

// The inputs node `id` depends on.
std::set<NodeId> leaf_inputs(const Graph& g, NodeId id) {
  std::set<NodeId> seen, leaves;
  std::vector<NodeId> stack{id};
  while (!stack.empty()) {
    NodeId n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    const Node& node = g.node(n);
    if (node.op == Op::Input) leaves.insert(n);
    for (const Edge& e : node.inputs) stack.push_back(e.node);
  }
  return leaves;
}

std::optional<int64_t> static_dim(const Expr& e) {
  Expr s = simplify(e);
  if (!s.is_const()) return std::nullopt;
  return s.value();
}

// The formats whose stored shapes and dtypes the parameters have.
std::vector<Format> shape_formats(const Graph& g, const QuantParams& p, int64_t n, int64_t k) {
  const Node& q = g.node(p.q);
  const Node& s = g.node(p.scales);
  auto shape_is = [](const Node& node, int64_t a, int64_t b) {
    return node.shape.size() == 2 && static_dim(node.shape[0]) == a && static_dim(node.shape[1]) == b;
  };
  if (!is_float(s.dtype)) return {};
  bool mins = p.mins >= 0;
  if (p.high >= 0) {  // Q6_K's quarters: low nibbles, bit pairs, a scale every 16 elements
    const Node& h = g.node(p.high);
    bool six = q.dtype == DType::U8 && h.dtype == DType::U8 && shape_is(q, n, k / 2) && shape_is(h, n, k / 4) &&
               shape_is(s, n, k / 16) && !mins && k % 128 == 0;
    return six ? std::vector<Format>{{Form::SixBit, 0, false, 16}} : std::vector<Format>{};
  }
  if (!shape_is(s, n, k / kBlock)) return {};
  if (mins && (!shape_is(g.node(p.mins), n, k / kBlock) || !is_float(g.node(p.mins).dtype))) return {};
  if (q.dtype == DType::I8 && shape_is(q, n, k) && !mins) return {{Form::Signed, 0, false}};
  if (q.dtype == DType::U8 && shape_is(q, n, k) && mins) return {{Form::Unsigned, 0, true}};
  if (q.dtype == DType::U8 && shape_is(q, n, k / 2)) {
    if (!mins) return {{Form::Nibbles, 16, false}};
    return {{Form::Nibbles, 16, true}, {Form::Nibbles, 32, true}};
  }
  return {};
}

// Whether the weight node computes `f`'s dequantization: its value at
// sampled points (the first and last rows; the first 128 and the last 64
// columns) on random parameter values.
bool computes_format(const Graph& g, NodeId weight, const QuantParams& p, const Format& f, int64_t n, int64_t k) {
  std::mt19937 rng(1234);
  const Node& qn = g.node(p.q);
  int64_t kb = f.form == Form::Nibbles || f.form == Form::SixBit ? k / 2 : k, blocks = k / f.scale_block;
  Array q(qn.dtype, {n, kb}), scales(g.node(p.scales).dtype, {n, blocks}), mins, pairs;
  if (f.mins) mins = Array(g.node(p.mins).dtype, {n, blocks});
  if (f.form == Form::SixBit) pairs = Array(DType::U8, {n, k / 4});
  const double values[] = {0.5, 0.75, 1.25, 2.0, -1.5, 0.375};
  std::vector<int64_t> rows{0, n - 1};
  for (int64_t row : rows) {
    for (int64_t j = 0; j < kb; ++j) q.set(row * kb + j, static_cast<double>(rng() % 256) - (qn.dtype == DType::I8 ? 128 : 0));
    for (int64_t j = 0; pairs.defined() && j < k / 4; ++j) {
      pairs.set(row * (k / 4) + j, static_cast<double>(rng() % 256));
    }
    for (int64_t b = 0; b < blocks; ++b) {
      scales.set(row * blocks + b, values[rng() % 6]);
      if (f.mins) mins.set(row * blocks + b, values[rng() % 6] * 3);
    }
  }
  std::map<NodeId, const Array*> buffers{{p.q, &q}, {p.scales, &scales}};
  if (f.mins) buffers[p.mins] = &mins;
  if (pairs.defined()) buffers[p.high] = &pairs;
  interp::PointEvaluator eval(g, buffers, Bindings{});
  for (int64_t row : rows) {
    for (int64_t col = 0; col < k; ++col) {
      if (col >= 128 && col < k - 64) continue;
      double d = scales.get(row * blocks + col / f.scale_block), want = 0;
      if (f.form == Form::SixBit) {  // quarter c's element m (WeightFormat::Q6_K)
        int64_t c = (col % 128) / 32, m = (col / 128) * 32 + col % 32, quarter = k / 4;
        auto low = static_cast<int64_t>(q.get(row * kb + (c % 2) * quarter + m));
        auto pair = static_cast<int64_t>(pairs.get(row * quarter + m));
        int64_t six = (c < 2 ? low & 15 : low >> 4) | (((pair >> (2 * c)) & 3) << 4);
        d = scales.get(row * blocks + c * (k / 64) + m / 16);
        want = static_cast<double>(six - 32) * d;
      } else if (f.form == Form::Nibbles) {
        int64_t group = col / (2 * f.half), j = col % f.half;
        auto byte = static_cast<int64_t>(q.get(row * kb + group * f.half + j));
        int64_t nibble = (col / f.half) % 2 ? byte >> 4 : byte & 15;
        want = static_cast<double>(nibble - (f.mins ? 0 : 8)) * d;
      } else {
        want = q.get(row * kb + col) * d;
      }
      if (f.mins) want += mins.get(row * blocks + col / kBlock);
      std::vector<int64_t> at(g.node(weight).shape.size());
      int64_t flat = row * k + col;
      for (size_t d = at.size(); d-- > 0;) {
        int64_t extent = simplify(g.node(weight).shape[d]).value();
        at[d] = flat % extent;
        flat /= extent;
      }
      double got = eval.value(weight, at).to_double();
      if (!(std::abs(got - want) <= 1e-5 * (1 + std::abs(want)))) return false;
    }
  }
  return true;
}

// A contraction the rewrite can take: out[.., m, n] = sum_k x[.., m, n, k] · W[n, k].
struct Match {
  NodeId sum = -1;
  size_t weight_operand = 0;  // which operand of the product reads W
  NodeId weight = -1;
  std::string base;
  QuantParams params;
  Format format{};
  int64_t n = 0, k = 0;
};

// Why `sum` is not a contraction of a quantized weight this rewrite takes
// (empty when it is; "-" when it reads no quantized weight at all).
std::string match(const Graph& g, NodeId sum, const std::map<std::string, QuantParams>& quants, Match& m) {
  const Node& s = g.node(sum);
  if (s.op != Op::SumReduce || s.dtype != DType::F32 || s.inputs.size() != 1) return "-";
  const Edge& in = s.inputs[0];
  const Node& prod = g.node(in.node);
  if (prod.op != Op::Mul || prod.dtype != DType::F32) return "-";
  const size_t rank = prod.shape.size();
  for (size_t operand = 0; operand < 2; ++operand) {
    const Edge& we = prod.inputs[operand];
    std::set<NodeId> leaves = leaf_inputs(g, we.node);
    for (const auto& [base, p] : quants) {
      if (p.q < 0 || p.scales < 0 || !leaves.count(p.q)) continue;
      std::set<NodeId> own{p.q, p.scales};
      if (p.mins >= 0) own.insert(p.mins);
      if (p.high >= 0) own.insert(p.high);
      if (leaves != own) continue;  // an activation computed from the weight (an embedding), not a weight
      if (!in.view.is_contiguous() || rank < 3 || s.axis != static_cast<int>(rank) - 1) {
        return base + ": not a sum over the weight's last dim in matmul form";
      }
      // The weight node W (any shape: dequantization ends in a reshape, a view) read as [n, k] at the product's last two dims.
      const Node& w = g.node(we.node);
      auto n = static_dim(prod.shape[rank - 2]), k = static_dim(prod.shape[rank - 1]);
      std::optional<int64_t> numel = 1;
      for (const Expr& d : w.shape) numel = numel && static_dim(d) ? std::optional<int64_t>(*numel * *static_dim(d)) : std::nullopt;
      if (!n || !k || !numel || *numel != *n * *k || w.dtype != DType::F32) {
        return base + ": the weight is not a static f32 value of n x k elements";
      }
      if (*k % 64 != 0) return base + ": K = " + std::to_string(*k) + " is not a multiple of 64";
      // The product reads W[n, k] at [.., n, k] and the activation independently of n.
      std::vector<Expr> idx;
      for (size_t d = 0; d < rank; ++d) idx.push_back(Expr::var("i" + std::to_string(d), 0, 1 << 30));
      View::Index wi = we.view.index(idx);
      if (!simplify(wi.valid).is_const(1) || !simplify(wi.index - (idx[rank - 2] * *k + idx[rank - 1])).is_const(0)) {
        return base + ": the product does not read the weight as [n, k] at its last two dims";
      }
      const Edge& xe = prod.inputs[1 - operand];
      if (g.node(xe.node).dtype != DType::F32) return base + ": the activation is not f32";
      // Matrix-vector products only (decode): the int8 kernels are row kernels; a matrix product (prefill)
      // keeps its tiled f32 kernel.
      double rows = 1;
      for (size_t d = 0; d + 2 < rank; ++d) {
        auto e = static_dim(prod.shape[d]);
        rows = e ? rows * static_cast<double>(*e) : 1e18;
      }
      if (rows > kMaxRows) return base + ": " + (rows >= 1e18 ? std::string("a dynamic number of") : std::to_string(static_cast<int64_t>(rows))) +
                                " rows (matrix products keep their f32 kernels; the int8 kernels are matrix-vector kernels)";
      View::Index xi = xe.view.index(idx);
      auto vars = expr_vars(simplify(xi.index));
      auto vvars = expr_vars(simplify(xi.valid));
      vars.insert(vars.end(), vvars.begin(), vvars.end());
      for (const Expr& v : vars) {
        if (v == idx[rank - 2]) return base + ": the activation varies along n";
      }
      std::vector<Format> formats = shape_formats(g, p, *n, *k);
      if (formats.empty()) return base + ": its parameters have no known block format's shapes";
      for (const Format& f : formats) {
        if (computes_format(g, we.node, p, f, *n, *k)) {
          m = Match{sum, operand, we.node, base, p, f, *n, *k};
          return "";
        }
      }
      return base + ": the weight expression is not a known block format's dequantization";
    }
  }
  return "-";
}

Tensor number(const Tensor& like, double v, DType d) { return like.scalar(v).cast(d); }

Tensor f32(const Tensor& t) { return t.dtype() == DType::F32 ? t : t.cast(DType::F32); }

void accumulate(Tensor& acc, const Tensor& v) { acc = acc.defined() ? acc.add(v) : v; }

// Chain h's weight quants as unsigned bytes (i32) from the weight's bytes [.., 4]: an i8 q as
// q + 128 (`flipped`: the bytes already hold it), a u8 q as itself, a nibble (h: low or high).
Tensor unsigned_quants(const Tensor& wbytes, const Format& f, int h, bool flipped = false) {
  Tensor wq = wbytes.cast(DType::I32);
  if (f.form == Form::Signed) return flipped ? wq : wq.add(number(wq, 128, DType::I32));
  if (f.form == Form::Unsigned) return wq;
  if (h == 0) return wq.mod(number(wq, 16, DType::I32));
  Tensor b = wbytes.cast(DType::F32);  // the high nibble, floor(byte / 16), exactly (a float below 16)
  return b.mul(b.scalar(0.0625)).cast(DType::I32);
}

// Bit pair c (bits 2c, 2c + 1) of each of the bytes, as i32: floor(b / 4^c) % 4 (the float
// scaling is exact; the top pair needs no % 4).
Tensor bit_pair(const Tensor& bytes, int c) {
  Tensor shifted = bytes.cast(DType::I32);
  if (c > 0) {
    Tensor b = bytes.cast(DType::F32);
    shifted = b.mul(b.scalar(std::ldexp(1.0, -2 * c))).cast(DType::I32);
  }
  return c == 3 ? shifted : shifted.mod(number(shifted, 4, DType::I32));
}

// `index` along `axis` of a contiguous node's output, read through one strided view (index
// linear in every coordinate: a slice and a squeeze would unflatten through the buffer's shape,
// and a vector overhanging a dim's end would then wrap around instead of walking on, masked).
Tensor linear_slice(const Tensor& contiguous, int axis, int64_t index, int64_t split_last = 0) {
  Graph* g = contiguous.graph();
  if (!contiguous.view().is_contiguous()) fail("int8 dot products: a strided slice of a non-contiguous view (internal error)");
  const Shape& base = contiguous.shape();  // a contiguous view: its row-major layout is the node's
  std::vector<Expr> strides(base.size());
  Expr stride(1);
  for (size_t d = base.size(); d-- > 0;) {
    strides[d] = stride;
    stride = simplify(stride * base[d]);
  }
  Shape shape;
  std::vector<Expr> kept;
  for (size_t d = 0; d < base.size(); ++d) {
    if (static_cast<int>(d) == axis) continue;
    shape.push_back(base[d]);
    kept.push_back(strides[d]);
  }
  if (split_last > 0) {  // the last dim read as [last / split_last, split_last]
    Expr last = shape.back();
    shape.back() = simplify(last / split_last);
    shape.push_back(Expr(split_last));
    kept.back() = Expr(split_last);
    kept.push_back(Expr(1));
  }
  return Tensor(g, contiguous.node_id(),
                View::strided(g->node(contiguous.node_id()).shape, shape, kept, simplify(strides[static_cast<size_t>(axis)] * index)));
}

// The sum over t < 4 of the last axis of `v` [.., 4]: one i32 lane of vpdpbusd (or, for the
// activation's bytes alone, of vpdpbusd with bytes of ones).
Tensor four_sum(const Tensor& v) {
  int axis = static_cast<int>(v.rank()) - 1;
  Tensor sum;
  for (int t = 0; t < 4; ++t) {
    Tensor term = v.slice(axis, Expr(t), Expr(t + 1));
    accumulate(sum, term);
  }
  return sum.squeeze(axis);
}

// The activation quantized per block of 32, in the weight's byte order: three
// small kernels (the scales, a row reduction; the bytes, elementwise, 1/d
// inline; the sums of every four bytes).
struct QuantizedActivation {
  Tensor bytes;  // i8 [lead.., H, Kb]: H chains (2 for nibbles: the low and the high quants of each group; 4 for Q6_K)
  Tensor sums;   // i32 [lead.., H, Kb / 4]: the sums of every four bytes
  Tensor scale;  // f32 [lead.., K / 32]: d = max|x| / 127, rounded to f16 (as ggml's block_q8_0 keeps it)
  Tensor block_sums;  // f32 [lead.., K / 32]: d · Σq per block, in the activation's order (the weight mins' factor)
  std::map<std::string, Tensor> block_byte_sums;  // the sums of a chain's blocks, by "chain groups-a-block" (row lanes)
};

QuantizedActivation quantize(const Tensor& x, const Format& f, int64_t k) {
  Shape lead(x.shape().begin(), x.shape().end() - 1);
  auto with = [&](std::initializer_list<int64_t> tail) {
    Shape s = lead;
    for (int64_t e : tail) s.push_back(Expr(e));
    return s;
  };
  const int64_t blocks = k / kBlock;
  Tensor xb = x.reshape(with({blocks, kBlock}));
  std::vector<std::pair<Expr, Expr>> pad_low(xb.rank(), {Expr(0), Expr(0)}), pad_high = pad_low;
  pad_low.back() = {Expr(0), Expr(kBlock)};
  pad_high.back() = {Expr(kBlock), Expr(0)};
  Tensor both = xb.pad(pad_low).add(xb.mul(xb.scalar(-1)).pad(pad_high));  // [.., blocks, 64]: x and -x
  // The scale the quants are made with is the one they are multiplied by (ggml rounds d to f16 after
  // quantizing with the f32 d: a difference of at most 2^-11 of a step).
  Tensor amax = both.max_reduce(-1);  // max |x| per block
  Tensor d = amax.mul(amax.scalar(1.0f / 127.0f)).cast(DType::F16).cast(DType::F32).buffered();
  // 1/d. A block of zeros has d = 0: x · (1/d) is 0 · inf = NaN there, and NaN casts to 0 (the
  // interpreter's and the kernels' cast), the right quant. One op, so that fusion computes it in the
  // quantizing kernel rather than in a kernel of its own.
  Tensor inverse = d.recip();
  Tensor t = xb.mul(inverse.unsqueeze(-1));
  // round half away from zero (roundf): truncate t + 0.5 - [t < 0]
  Tensor rounded = t.add(t.scalar(0.5)).add(t.less_than(t.scalar(0)).cast(DType::F32).mul(t.scalar(-1)));
  Tensor q = rounded.cast(DType::I8);  // |q| <= 127 (|x| / d <= 127 up to d's rounding; the cast saturates)
  // The quants in the chains' order: a chain's runs of quants, chain after chain. Nibbles: [.., K] as
  // [.., K / 2half, 2, half] -> [.., 2, K / 2half, half] (the low quants of every group, then the high);
  // six-bit quants: [.., K / 128, 4, 32] -> [.., 4, K / 128, 32] (quarter after quarter).
  const int64_t chains = f.chains(), run = f.form == Form::Nibbles ? f.half : 32;
  Tensor ordered = q.reshape(with({1, k}));
  if (chains > 1) {
    std::vector<int> order;
    for (size_t i = 0; i < lead.size(); ++i) order.push_back(static_cast<int>(i));
    int at = static_cast<int>(lead.size());
    order.insert(order.end(), {at + 1, at, at + 2});
    ordered = q.reshape(with({k / (chains * run), chains, run})).permute(order).reshape(with({chains, k / chains}));
  }
  // Bytes stored as [.., H, Kb] (SIMD stores along Kb) and read as [.., R, 4] through a strided view
  // (linear_slice), the sums as [.., H, R]: the dot kernel's index stays linear in the group r where
  // a vector overhangs R.
  int64_t h = chains, kb = f.chain_bytes(k);
  Tensor bytes = ordered.reshape(with({h, kb})).buffered();  // a last dim of Kb: SIMD stores
  Tensor sums = four_sum(bytes.reshape(with({h, kb / 4, 4})).cast(DType::I32)).buffered();
  Tensor block_sums = q.cast(DType::I32).sum_reduce(-1).cast(DType::F32).mul(d).buffered();
  return QuantizedActivation{bytes, sums, d, block_sums};
}

// Entry h of every `ways` along the last dim of t [.., B]: [.., B / ways].
Tensor every(const Tensor& t, int64_t ways, int h) {
  Shape s = t.shape();
  const int64_t b = s.back().value();
  s.back() = Expr(b / ways);
  s.push_back(Expr(ways));
  Shape out = t.shape();
  out.back() = Expr(b / ways);
  return t.reshape(s).slice(static_cast<int>(s.size()) - 1, Expr(h), Expr(h + 1)).reshape(out);
}

// The activation's blocks of 32 chain h reads, among a per-block tensor [.., K / 32]: Q4_K's
// chains take alternate blocks, Q6_K's quarters every fourth.
Tensor chain_blocks(const Tensor& t, const Format& f, int h) {
  if (f.form == Form::SixBit) return every(t, 4, h);
  return f.form == Form::Nibbles && f.half == 32 ? every(t, 2, h) : t;
}

// Part `h` of `parts` equal parts along the last dim of t [.., X]: [.., X / parts].
Tensor part(const Tensor& t, int64_t parts, int h) {
  Shape s = t.shape();
  const int64_t x = s.back().value();
  s.back() = Expr(parts);
  s.push_back(Expr(x / parts));
  const int at = static_cast<int>(s.size()) - 2;
  return t.reshape(s).slice(at, Expr(h), Expr(h + 1)).squeeze(at);
}

// Per group of four weight bytes r (Kb / 4 of them), the f32 value of a
// per-block tensor [.., K / block] of the block that group's `half` (0 low,
// 1 high) belongs to.
Tensor per_group(const Tensor& blocks, const Format& f, int half_index, int64_t k, int64_t block = kBlock) {
  Shape lead(blocks.shape().begin(), blocks.shape().end() - 1);
  auto with = [&](std::initializer_list<int64_t> tail) {
    Shape s = lead;
    for (int64_t e : tail) s.push_back(Expr(e));
    return s;
  };
  const int64_t nb = k / block;
  const Tensor& t = blocks;
  if (f.form == Form::Nibbles && f.half == 32) {
    // groups of 64 quants: the low ones are block 2g, the high ones block 2g + 1; 8 byte groups a block
    return chain_blocks(t, f, half_index).unsqueeze(-1).expand(with({nb / 2, 8})).reshape(with({nb * 4}));
  }
  int64_t lanes = f.form == Form::Nibbles ? 4 : block / 4;  // byte groups of four a block: 16, 32 (or 16: Q6_K) bytes
  return t.reshape(with({nb, 1})).expand(with({nb, lanes})).reshape(with({nb * lanes}));
}

// out[.., m, n] of the match, from the activation x [.., m, 1, K] quantized as `a`.
Tensor int8_contraction(Graph& g, const QuantizedActivation& a, size_t lead, const Match& m) {
  const Format& f = m.format;
  const int64_t k = m.k, n = m.n;
  const int64_t groups = f.chain_bytes(k) / 4;
  Tensor wbytes = g.tensor(m.params.q).reshape({Expr(n), Expr(groups), Expr(4)});
  Tensor scales = f32(g.tensor(m.params.scales));  // [N, K / scale_block]
  Tensor mins = m.format.mins ? f32(g.tensor(m.params.mins)) : Tensor();
  const int chains = f.chains();
  const bool shared = f.form == Form::Nibbles && f.half == 16;  // Q4_0 / Q4_1: both chains of a group in one block
  Tensor total, dot, sums;
  for (int h = 0; h < chains; ++h) {
    Tensor u = unsigned_quants(wbytes, f, h);
    Tensor xq = linear_slice(a.bytes, static_cast<int>(lead), h, 4).cast(DType::I32);  // [.., m, 1, R, 4]
    Tensor chain = four_sum(u.mul(xq));             // [.., m, N, R]
    // [.., m, 1, R] expanded to the chain's [.., m, N, R] before any op on it: an op on the
    // unexpanded sums would be a node read once per n, which fusion materialises (a kernel).
    // (Summing the bytes in the dot kernel instead, one vpdpbusd with bytes of ones a vector, saves
    // a kernel an activation: measured on SmolLM2 decode, 5% faster at 2 threads, 8% slower at 1.)
    accumulate(dot, chain);
    if (!f.mins) accumulate(sums, linear_slice(a.sums, static_cast<int>(lead), h).expand(chain.shape()));
    if (shared && h == 0) continue;
    Tensor integer = f.offset() ? dot.add(sums.mul(number(sums, -f.offset(), DType::I32))) : dot;
    Tensor term = f32(integer).mul(per_group(scales, f, h, k, f.scale_block));  // [.., m, N, R]
    accumulate(total, term.mul(per_group(a.scale, f, h, k)));
    dot = Tensor();
    sums = Tensor();
  }
  if (!f.mins) return total.sum_reduce(-1);  // [.., m, N]
  // The mins' part, sum_b m_w[n, b] · d_x[b] · Σq_b: a contraction of K / 32 terms a row, apart
  // from the byte groups' (inside them it cost a load, a convert and a spread of m_w a vector a row).
  Tensor mins_part = mins.mul(a.block_sums).sum_reduce(-1);  // [N, K/32] · [.., m, 1, K/32] -> [.., m, N]
  return total.sum_reduce(-1).add(mins_part);
}

// A per-row parameter array [N, X] stored kRowLanes rows interleaved, [N' / L, X / c, L, c] (c:
// the elements one lane takes; N' = N rounded up to L rows, the rows past N zeros), read back as
// [N', X]. Its kernel reads parameters only and makes no more bytes than it reads (up to the
// padding), so the compiler runs it once and keeps it (lower_stage).
Tensor rows_interleaved(const Tensor& w, int64_t c) {
  const int64_t n = w.shape()[0].value(), x = w.shape()[1].value(), l = kRowLanes, rows = (n + l - 1) / l * l;
  Tensor padded = rows == n ? w : w.pad({{Expr(0), Expr(rows - n)}, {Expr(0), Expr(0)}});
  Tensor packed = padded.reshape({Expr(rows / l), Expr(l), Expr(x / c), Expr(c)}).permute({0, 2, 1, 3}).buffered();
  return packed.permute({0, 2, 1, 3}).reshape({Expr(rows), Expr(x)});
}


// out[.., m, n] of the match with SIMD lanes along the weight's rows: the weight bytes and
// scales stored kRowLanes rows interleaved (rows_interleaved), each lane of vpdpbusd one row's
// four bytes against the activation's four (the same for every lane), the products of a block
// summed as integers and scaled once a block. Per block a vector of rows takes a convert and two
// multiplies, where lanes along k took a spread of the row's scales every vector.
Tensor int8_contraction_row_lanes(Graph& g, QuantizedActivation& a, size_t lead, const Match& m) {
  const Format& f = m.format;
  const int64_t k = m.k, n = (m.n + kRowLanes - 1) / kRowLanes * kRowLanes;  // rows as interleaved (padded)
  const int64_t groups = f.chain_bytes(k) / 4;  // byte groups of four of a chain in a row
  // i8 quants are kept as u8 q + 128 (the interleaved copy makes them once): vpdpbusd's unsigned operand as it is.
  Tensor q_param = g.tensor(m.params.q);
  if (f.form == Form::Signed) {
    Tensor wide = q_param.cast(DType::I32);
    q_param = wide.add(number(wide, 128, DType::I32)).cast(DType::U8);
  }
  const int chains = f.chains();
  Tensor wbytes = rows_interleaved(q_param, 4), pairs;  // [N, bytes]
  if (f.form == Form::SixBit) pairs = rows_interleaved(g.tensor(m.params.high), 4);
  // Chain h's quants as unsigned bytes [N, R, 4]. Q6_K's quarter h: nibble h / 2 of the low bytes'
  // half h % 2 and bit pair h of the pair bytes, as bits 4 and 5.
  auto chain_quants = [&](int h) {
    auto grouped = [&](const Tensor& t) { return t.reshape({Expr(n), Expr(groups), Expr(4)}); };
    if (f.form != Form::SixBit) return unsigned_quants(grouped(wbytes), f, h, true);
    Tensor nibble = unsigned_quants(grouped(part(wbytes, 2, h % 2)), Format{Form::Nibbles, 32}, h / 2);
    Tensor pair = bit_pair(grouped(pairs), h);
    return nibble.add(pair.mul(number(pair, 16, DType::I32)));
  };
  // f32 scales (the k-quants' d·sc) kept as f16 (a relative error of at most 2^-12 each, a sixteenth
  // of the activation's 8-bit rounding; f16 scales (Q8_0, Q4_0) stay as they are: exact).
  auto narrowed = [](const Tensor& t) { return t.dtype() == DType::F32 ? t.cast(DType::F16) : t; };
  Tensor scales = f32(rows_interleaved(narrowed(g.tensor(m.params.scales)), 1));  // [N, B]
  // Chain h's weight scales: Q6_K's are quarter after quarter, the others' chain_blocks.
  auto chain_scales = [&](int h) { return f.form == Form::SixBit ? part(scales, 4, h) : chain_blocks(scales, f, h); };
  // Byte groups of four a block of a chain: 8 (Q8_0), 4 (Q6_K: blocks of 16), 4 (Q4_0: a block's
  // 16 bytes hold both chains), 8 (Q4_K: a chain's block is 32 bytes of a 64-quant group).
  const int64_t per_block = f.form == Form::Signed || f.form == Form::SixBit ? f.scale_block / 4 : f.half / 4;
  const bool shared = f.form == Form::Nibbles && f.half == 16;
  auto blocks_of = [&](const Tensor& t) {  // [.., R] -> [.., R / per_block, per_block] summed over the last
    Shape s = t.shape();
    s.back() = Expr(groups / per_block);
    s.push_back(Expr(per_block));
    return t.reshape(s).sum_reduce(-1);
  };
  Tensor total, dot, sums;
  for (int h = 0; h < chains; ++h) {
    Tensor u = chain_quants(h);
    Tensor xq = linear_slice(a.bytes, static_cast<int>(lead), h, 4).cast(DType::I32);  // [.., m, 1, R, 4]
    accumulate(dot, blocks_of(four_sum(u.mul(xq))));  // [.., m, N, R / per_block]
    if (!f.mins) {  // the offset's sums, a block's four-byte sums summed (made once an activation)
      std::string key = std::to_string(h) + " " + std::to_string(per_block);
      auto it = a.block_byte_sums.find(key);
      if (it == a.block_byte_sums.end()) {
        it = a.block_byte_sums.emplace(key, blocks_of(linear_slice(a.sums, static_cast<int>(lead), h)).buffered()).first;
      }
      accumulate(sums, it->second);  // [.., m, 1, R / per_block]
    }
    if (shared && h == 0) continue;
    Tensor integer = f.offset() ? dot.add(sums.mul(number(sums, -f.offset(), DType::I32))) : dot;
    Tensor x_scale = chain_blocks(a.scale, f, h);
    if (f.scale_block < kBlock) {  // Q6_K: two weight blocks of 16 an activation block of 32 of the chain
      Shape wide = x_scale.shape(), each = wide;
      const int64_t per = kBlock / f.scale_block;
      each.push_back(Expr(per));
      wide.back() = Expr(wide.back().value() * per);
      x_scale = x_scale.unsqueeze(-1).expand(each).reshape(wide);
    }
    accumulate(total, f32(integer).mul(chain_scales(h)).mul(x_scale));
    dot = Tensor();
    sums = Tensor();
  }
  Tensor out = total.sum_reduce(-1);  // [.., m, N]
  if (f.mins) {
    out = out.add(f32(rows_interleaved(narrowed(g.tensor(m.params.mins)), 1)).mul(a.block_sums).sum_reduce(-1));
  }
  // Rows past the weight's (padding: zeros) cut off, the result copied contiguous.
  return n == m.n ? out : out.slice(static_cast<int>(out.rank()) - 1, Expr(0), Expr(m.n)).buffered();
}

// The probe of a match: the weight expression's nodes copied into a graph of their own.
Int8DotProbe make_probe(const Graph& graph, const Match& m) {
  Int8DotProbe probe;
  probe.label = m.base + " (" + m.format.name() + ") " + std::to_string(m.n) + " x " + std::to_string(m.k);
  Graph& g = probe.graph;
  std::set<NodeId> needed;
  std::vector<NodeId> stack{m.weight};
  while (!stack.empty()) {
    NodeId n = stack.back();
    stack.pop_back();
    if (!needed.insert(n).second) continue;
    for (const Edge& e : graph.node(n).inputs) stack.push_back(e.node);
  }
  std::map<NodeId, NodeId> to;
  for (NodeId id : needed) {  // ascending: producers first
    Node copy = graph.node(id);
    for (Edge& e : copy.inputs) e.node = to.at(e.node);
    to[id] = g.add(std::move(copy));
  }
  Tensor w = g.tensor(to.at(m.weight)).reshape({Expr(m.n), Expr(m.k)});
  Tensor x = g.input("x", {Expr(1), Expr(m.k)});
  Tensor y = x.matmul(w.transpose(0, 1));
  g.mark_output(y, "y");
  probe.outputs = {y.edge()};
  Int8DotRewrite r = int8_dot_products(g, probe.outputs, false);
  if (r.rewritten.size() != 1) fail("int8 dot products: the probe of '", m.base, "' was not rewritten (internal error)");
  probe.rewritten = std::move(r.graph);
  probe.rewritten_outputs = r.outputs;
  return probe;
}

}  // namespace

Int8DotRewrite int8_dot_products(const Graph& graph, const std::vector<Edge>& outputs) {
  return int8_dot_products(graph, outputs, true);
}

Int8DotRewrite int8_dot_products(const Graph& graph, const std::vector<Edge>& outputs, bool with_probes) {
  Int8DotRewrite out;
  auto quants = quant_params(graph);
  std::map<NodeId, Match> matches;
  if (!quants.empty()) {
    for (NodeId id = 0; id < static_cast<NodeId>(graph.size()); ++id) {
      Match m;
      std::string why = match(graph, id, quants, m);
      if (why.empty()) matches[id] = m;
      else if (why != "-") out.refused.push_back(why);
    }
  }
  if (matches.empty()) {
    out.graph = graph;
    out.outputs = outputs;
    return out;
  }
  Graph& g = out.graph;
  for (const std::string& d : graph.dim_names()) g.dim(d);
  std::vector<NodeId> to(graph.size(), -1);
  std::map<std::string, QuantizedActivation> quantized;
  std::set<std::string> probed;  // formats and shapes with a probe
  auto moved = [&](const Edge& e) { return Edge{to[static_cast<size_t>(e.node)], e.view}; };
  for (NodeId id = 0; id < static_cast<NodeId>(graph.size()); ++id) {
    const Node& node = graph.node(id);
    auto it = matches.find(id);
    if (it == matches.end()) {
      Node copy = node;
      for (Edge& e : copy.inputs) e = moved(e);
      to[static_cast<size_t>(id)] = g.add(std::move(copy));
      continue;
    }
    // The match in the new graph's ids (rewrites before it added nodes: ids after them moved).
    Match m = it->second;
    m.params.q = to[static_cast<size_t>(m.params.q)];
    m.params.scales = to[static_cast<size_t>(m.params.scales)];
    if (m.params.mins >= 0) m.params.mins = to[static_cast<size_t>(m.params.mins)];
    const Node& prod = graph.node(node.inputs[0].node);
    Edge xe = moved(prod.inputs[1 - m.weight_operand]);
    Tensor x = Tensor(&g, xe.node, xe.view);
    int n_axis = static_cast<int>(x.rank()) - 2;
    x = x.slice(n_axis, Expr(0), Expr(1));  // [.., m, 1, K]: the activation does not vary along n
    // One quantization per activation and byte order (q, k and v read the same normed x).
    std::string key = std::to_string(x.node_id()) + " " + x.view().to_string() + " " + std::to_string(m.k) + " " +
                      std::to_string(static_cast<int>(m.format.form)) + " " + std::to_string(m.format.half);
    auto q = quantized.find(key);
    if (q == quantized.end()) q = quantized.emplace(key, quantize(x, m.format, m.k)).first;
    // Lanes along the rows where they fill vectors (Q6_K's quarters always: its rows padded).
    const bool row_lanes = (m.n % kRowLanes == 0 || m.format.form == Form::SixBit) && m.format.form != Form::Unsigned;
    Tensor result = row_lanes ? int8_contraction_row_lanes(g, q->second, x.rank() - 1, m) : int8_contraction(g, q->second, x.rank() - 1, m);
    if (!(result.view().is_contiguous()) || result.shape() != node.shape) {
      fail("int8 dot products: the rewrite of '", m.base, "' gave ", to_string(result.shape()), " for ", to_string(node.shape),
           " (internal error)");
    }
    to[static_cast<size_t>(id)] = result.node_id();
    out.rewritten.push_back(m.base + " (" + m.format.name() + ")");
    if (with_probes) {
      std::string shape = "(" + m.format.name() + ") " + std::to_string(m.n) + " x " + std::to_string(m.k);
      if (probed.insert(shape).second) out.probes.push_back(make_probe(graph, it->second));
    }
  }
  for (const NamedOutput& o : graph.outputs()) g.mark_output(Tensor(&g, to[static_cast<size_t>(o.edge.node)], o.edge.view), o.name);
  for (const StateUpdate& u : graph.updates()) {
    Edge v = moved(u.value);
    g.assign(Tensor(&g, to[static_cast<size_t>(u.state)], u.view), Tensor(&g, v.node, v.view));
  }
  for (const DimConstraint& c : graph.constraints()) g.require(c.condition, c.message);
  for (const Edge& e : outputs) out.outputs.push_back(moved(e));
  return out;
}

}  // namespace lumen::compiler
