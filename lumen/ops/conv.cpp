#include "lumen/ops/conv.h"

#include <cmath>
#include <functional>
#include <optional>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/ops/elementwise.h"
#include "lumen/ops/linalg.h"
#include "lumen/ops/math.h"
#include "lumen/ops/movement.h"
#include "lumen/ops/reduce.h"

namespace lumen::ops {

namespace {

// Depthwise windows up to this size are summed inline (reductions this short
// are written out; see kernel::kInlineReduceExtent).
constexpr int64_t kInlineWindow = 4;
// Strided depthwise windows up to 7 x 7 are written out as a sum of taps.
constexpr int64_t kTapsInline = 49;

int64_t static_size(const Tensor& x, size_t d, const char* op) {
  const Expr& e = x.shape()[d];
  if (!e.is_const()) fail(op, ": needs static spatial sizes, got shape ", to_string(x.shape()));
  return e.value();
}

void check_rank(const Tensor& x, size_t rank, const char* op, const char* layout) {
  if (x.rank() != rank) fail(op, ": expects ", layout, ", got shape ", to_string(x.shape()));
}

// Output length of a sliding window, with PyTorch's ceil_mode rule.
int64_t window_count(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode,
                     const char* op) {
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t room = in + 2 * pad - span;
  if (room < 0) {
    fail(op, ": input size ", in, " (padded to ", in + 2 * pad, ") is smaller than the kernel span ", span);
  }
  int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;  // the last window must start inside the input
  return out;
}

// Whether reading `t` divides or takes a remainder per element: its view's index, simplified.
bool read_by_division(const Tensor& t) {
  const View& v = t.edge().view;
  View::Index i = v.index(loop_indices(v.shape()));
  std::function<bool(const Expr&)> divides = [&](const Expr& e) {
    if (!e.defined() || e.kind() == ExprKind::Const || e.kind() == ExprKind::Var) return false;
    if (e.kind() == ExprKind::Div || e.kind() == ExprKind::Mod) return true;
    if (e.kind() == ExprKind::Not) return divides(e.a());
    return divides(e.a()) || divides(e.b()) || (e.kind() == ExprKind::Select && divides(e.c()));
  };
  return divides(simplify(i.index)) || divides(simplify(i.valid));
}

// [N, C, H, W] padded (pad value `fill`) and cut into windows: [N, C, OH, KH, OW, KW]. With
// `channels_last`, x is [N, H, W, C] and the windows [N, OH, KH, OW, KW, C].
Tensor windows(const Tensor& x, Pair kernel, Pair stride, Pair padding, Pair dilation, bool ceil_mode, double fill,
               const char* op, Pair* out_size, bool channels_last = false) {
  size_t hd = channels_last ? 1 : 2;  // the spatial dims: hd, hd + 1
  int64_t h = static_size(x, hd, op), w = static_size(x, hd + 1, op);
  int64_t oh = window_count(h, kernel[0], stride[0], padding[0], dilation[0], ceil_mode, op);
  int64_t ow = window_count(w, kernel[1], stride[1], padding[1], dilation[1], ceil_mode, op);
  *out_size = {oh, ow};
  // Extra padding after the end so the last ceil-mode window is complete.
  int64_t extra_h = std::max<int64_t>((oh - 1) * stride[0] + dilation[0] * (kernel[0] - 1) + 1 - (h + 2 * padding[0]), 0);
  int64_t extra_w = std::max<int64_t>((ow - 1) * stride[1] + dilation[1] * (kernel[1] - 1) + 1 - (w + 2 * padding[1]), 0);
  std::vector<std::pair<Expr, Expr>> pads(4, {Expr(0), Expr(0)});
  pads[hd] = {Expr(padding[0]), Expr(padding[0] + extra_h)};
  pads[hd + 1] = {Expr(padding[1]), Expr(padding[1] + extra_w)};
  Tensor padded = x.pad(pads);
  if (fill != 0) {
    Tensor inside = scalar_like(x, 1, DType::Bool).expand(x.shape()).pad(pads);
    if (std::isinf(fill) && fill < 0) {
      padded = padded + neg_inf_where(logical_not(inside), x.dtype());  // exact: x + 0 inside, 0 - inf outside
    } else {
      padded = where(inside, padded, scalar_like(x, fill, x.dtype()));
    }
  }
  auto d = static_cast<int>(hd);
  auto unfolded = [&](const Tensor& t) {
    return t.unfold(d, kernel[0], stride[0], dilation[0]).unfold(d + 2, kernel[1], stride[1], dilation[1]);
  };
  // Channels-last, the windows read the values through the padding where their index needs no
  // division (values recorded channels-last): no padded copy, a pass over the values of its own
  // (mobilenet_v3_small's depthwise convs, 2 threads, in-process A/B: 1.05x in the machine's fast
  // mode, 1.19x in its slow one; resnet18's max pool 0.131 -> 0.068 ms). Where it does (windows
  // over a transposed value compose into two view layers), the padded values are a buffer.
  if (channels_last) {
    Tensor in_place = unfolded(padded);
    if (!read_by_division(in_place)) return in_place;
    padded = padded.buffered();
  }
  return unfolded(padded);
}

// Whether [N, C, H, W] `x` is computed from channels-last values: some value it is made of
// elementwise (a bias added, a ReLU: a max over a stacked pair), a few ops back, is read through
// one view whose last four dims stride 1 along C and more along W — a convolution's output, which
// conv2d computes positions x channels. Inputs and buffered values are NCHW as they are.
bool computed_channels_last(const Tensor& x) {
  const Graph& g = *x.graph();
  std::vector<std::pair<Edge, int>> todo = {{x.edge(), 0}};
  while (!todo.empty()) {
    auto [e, depth] = todo.back();
    todo.pop_back();
    const std::vector<ViewLayer>& layers = e.view.layers();
    const ViewLayer& top = layers.back();
    size_t r = top.strides.size();
    if (layers.size() == 1 && r >= 4 && top.strides[r - 3].is_const(1) && top.strides[r - 1].is_const() &&
        top.strides[r - 1].value() > 1) {
      return true;
    }
    const Node& n = g.node(e.node);
    bool follows = is_elementwise(n.op) || (n.op == Op::MaxReduce && n.inputs[0].view.shape()[static_cast<size_t>(n.axis)].is_const(2));
    if (!follows || depth >= 6) continue;
    for (const Edge& in : n.inputs) todo.push_back({in, depth + 1});
  }
  return false;
}

Pair default_stride(Pair stride, Pair kernel) { return stride[0] == 0 && stride[1] == 0 ? kernel : stride; }

// Bilinear upsampling of `x` along `axis` by a whole factor k (align_corners false): output
// k·m + p reads the source m + c, c = (p + 1/2)/k - 1/2 in (-1/2, 1/2), so it blends input m - 1
// and m (c < 0) or m and m + 1 (c >= 0) at weights that depend on the phase p alone. The input
// is extended by its first and last element (the source clamped to the edges blends an element
// with itself), each phase is a weighted sum of two shifted views, and the k phases interleave
// through a reshape: two multiply-adds per output where the dense interpolation matrix takes a
// row of multiply-adds (8 x 64 x 56² -> 112², 2 threads: 12.3 -> 5.3 ms; 3x: 3.9x faster).
Tensor bilinear_by_phases(const Tensor& x, int axis, int64_t k) {
  int64_t in = x.shape()[static_cast<size_t>(axis)].value();
  Tensor extended = concat({x.slice(axis, Expr(0), Expr(1)), x, x.slice(axis, Expr(in - 1), Expr(in))}, axis);
  std::vector<Tensor> phases;
  for (int64_t p = 0; p < k; ++p) {
    double c = (static_cast<double>(p) + 0.5) / static_cast<double>(k) - 0.5;
    int64_t first = c < 0 ? 0 : 1;  // extended[j + 1] = x[j]: input m - 1 or m
    double f = c < 0 ? 1 + c : c;   // the weight of the second neighbour
    Tensor a = extended.slice(axis, Expr(first), Expr(first + in));
    Tensor b = extended.slice(axis, Expr(first + 1), Expr(first + 1 + in));
    phases.push_back((a * (1.0 - f) + b * f).unsqueeze(axis + 1));
  }
  Shape merged = x.shape();
  merged[static_cast<size_t>(axis)] = Expr(in * k);
  return concat(phases, axis + 1).reshape(merged);
}

// Nearest-neighbour resampling along `axis` (length `in` to `out`) as a view, when the source
// index of every output i, source(i), is i / k (each element repeated k times: an integer
// upsampling, a broadcast) or i · k (every k-th element: a strided slice); the sources are
// computed here as the gather's index would compute them, so the view reads the same elements.
// nullopt when they follow neither pattern. (A gather of 2x nearest upsampling: 9x slower.)
template <typename Source>
std::optional<Tensor> nearest_view(const Tensor& x, int axis, int64_t in, int64_t out, Source&& source) {
  auto all = [&](auto&& want) {
    for (int64_t i = 0; i < out; ++i) {
      if (source(i) != want(i)) return false;
    }
    return true;
  };
  if (out >= in && out % in == 0 && all([&](int64_t i) { return i / (out / in); })) {
    int64_t k = out / in;
    Shape repeated = x.shape();
    repeated.insert(repeated.begin() + axis + 1, Expr(k));
    Shape merged = x.shape();
    merged[static_cast<size_t>(axis)] = Expr(out);
    return x.unsqueeze(axis + 1).expand(repeated).reshape(merged);
  }
  if (out < in && all([&](int64_t i) { return i * (in / out); })) {
    int64_t k = in / out;
    return x.slice(axis, Expr(0), Expr((out - 1) * k + 1), k);
  }
  return std::nullopt;
}

// [out, in] averaging matrix of adaptive pooling along one axis.
Tensor adaptive_matrix(Graph& g, int64_t in, int64_t out, DType dtype) {
  Shape s{Expr(out), Expr(in)};
  Expr i = loop_index(s, 0), h = loop_index(s, 1);
  Expr start = (i * in) / out, end = ((i + 1) * in + out - 1) / out;
  Tensor mask = g.iota(logical_and(ge(h, start), lt(h, end)), s, DType::Bool).cast(dtype);
  Tensor count = g.iota(end - start, s, DType::I32).cast(dtype);
  return mask / count;
}

// [out, in] linear-interpolation matrix along one axis (tent weights at the source coordinate).
Tensor bilinear_matrix(Graph& g, int64_t in, int64_t out, double scale, bool align_corners, DType dtype) {
  Shape s{Expr(out), Expr(1)};
  Tensor i = g.iota(loop_index(s, 0), s, DType::I32).cast(DType::F32);
  Tensor src;
  if (align_corners) {
    src = i * (out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0);
  } else {
    src = (i + 0.5) * scale - 0.5;
  }
  src = clamp(src, 0.0, static_cast<double>(in - 1));
  Shape t{Expr(1), Expr(in)};
  Tensor h = g.iota(loop_index(t, 1), t, DType::I32).cast(DType::F32);
  return relu(1.0 - abs(src - h)).cast(dtype);
}

// Windows [N, C, OH, KH, OW, KW] of a conv with `groups` groups of cg
// channels as a matrix [N, G, OH·OW, Cg·KH·KW]: a row per output position.
Tensor window_matrix(const Tensor& win, int64_t groups, int64_t cg, Pair out, int64_t kh, int64_t kw) {
  const Expr& n = win.shape()[0];
  return win.reshape({n, Expr(groups), Expr(cg), Expr(out[0]), Expr(kh), Expr(out[1]), Expr(kw)})
      .permute({0, 1, 3, 5, 2, 4, 6})
      .reshape({n, Expr(groups), Expr(out[0] * out[1]), Expr(cg * kh * kw)});
}

// conv2d as a contraction with the output channels as its last (SIMD) dim:
// [N, G, OH·OW, Og] = windows [N, G, OH·OW, 1, K] x weights [1, G, 1, Og, K],
// K = Cg·KH·KW, then transposed to [N, O, OH, OW]. The input is padded once
// into a buffer, so a window element is an affine read (no bounds check); a
// register tile of output positions x channels reads the weights as packed
// SIMD panels and broadcasts window elements, and the search can split the
// reduction into C x (KH·KW) loops so the index needs no division.
// `out`: the output size (OH, OW), checked by the caller.
Tensor conv2d_channels(const Tensor& x, const Tensor& weight, Pair stride, Pair padding, Pair dilation, int64_t groups,
                       Pair out) {
  int64_t o = static_size(weight, 0, "conv2d"), cg = static_size(weight, 1, "conv2d");
  int64_t kh = static_size(weight, 2, "conv2d"), kw = static_size(weight, 3, "conv2d");
  int64_t w = static_size(x, 3, "conv2d");
  Tensor source = x;
  // A window of at most 27 reads per output (3 x 3 over an image's three
  // channels) reads its input through the padding, a bounds test per read:
  // that costs less than a padded copy of the input, a pass of its own
  // (mobilenet_v3_small's first conv, 2 threads, in-process A/B: 1.05x; a
  // 7 x 7 window over three channels, resnet18's, lost 7% that way).
  if ((padding[0] > 0 || padding[1] > 0) && cg * kh * kw <= 27) {
    source = x.pad({{Expr(0), Expr(0)}, {Expr(0), Expr(0)}, {Expr(padding[0]), Expr(padding[0])},
                    {Expr(padding[1]), Expr(padding[1])}});
  } else if (padding[0] > 0 || padding[1] > 0) {
    // Rows of the padded copy are widened to a multiple of 16 when that costs
    // at most a quarter more, so the copy runs as SIMD rows (masked loads);
    // windows never read the extra columns.
    int64_t row = w + 2 * padding[1], wide = (row + 15) / 16 * 16;
    int64_t extra = (wide - row) * 4 <= row ? wide - row : 0;
    source = x.pad({{Expr(0), Expr(0)}, {Expr(0), Expr(0)}, {Expr(padding[0]), Expr(padding[0])},
                    {Expr(padding[1]), Expr(padding[1] + extra)}})
                 .contiguous();
    if (extra > 0) source = source.slice(3, Expr(0), Expr(row));
  }
  Tensor win = windows(source, {kh, kw}, stride, {0, 0}, dilation, false, 0, "conv2d", &out);  // padding is in `source`
  Tensor a = window_matrix(win, groups, cg, out, kh, kw).unsqueeze(3);  // [N, G, OH·OW, 1, K]
  Tensor b = weight.reshape({Expr(1), Expr(groups), Expr(1), Expr(o / groups), Expr(cg * kh * kw)});
  auto [lhs, rhs] = promote(a, b);
  return lhs.mul(rhs).sum_reduce(-1).permute({0, 1, 3, 2}).reshape({x.shape()[0], Expr(o), Expr(out[0]), Expr(out[1])});
}

// Depthwise conv2d (one input channel per group) with a kernel of at most
// 4 x 4: each output is KH·KW products summed inline (two small reductions),
// so no window matrix is built and nothing is packed (8x256x28² 3x3, 2
// threads: 3.8 -> 1.9 ms). Rows whose length the SIMD width does not divide
// are still scalar. `out`: the output size, checked by the caller.
Tensor conv2d_depthwise(const Tensor& x, const Tensor& weight, Pair stride, Pair padding, Pair dilation, Pair out) {
  int64_t c = static_size(x, 1, "conv2d"), o = static_size(weight, 0, "conv2d");
  int64_t kh = static_size(weight, 2, "conv2d"), kw = static_size(weight, 3, "conv2d");
  Tensor win = windows(x, {kh, kw}, stride, padding, dilation, false, 0, "conv2d", &out);  // [N, C, OH, KH, OW, KW]
  const Expr& n = x.shape()[0];
  Shape each{n, Expr(c), Expr(o / c), Expr(out[0]), Expr(kh), Expr(out[1]), Expr(kw)};
  Tensor per_output = win.unsqueeze(2).expand(each).reshape({n, Expr(o), Expr(out[0]), Expr(kh), Expr(out[1]), Expr(kw)});
  auto [lhs, rhs] = promote(per_output, weight.reshape({Expr(1), Expr(o), Expr(1), Expr(kh), Expr(1), Expr(kw)}));
  return lhs.mul(rhs).sum_reduce(5).sum_reduce(3);  // [N, O, OH, OW]
}

// `x` as a buffer of its own where it is computed: a value every output reads at KH·KW taps is
// computed once, not fused into the taps' loads (a pointwise conv's ReLU before a depthwise one).
Tensor stored(const Tensor& x) {
  Op op = x.graph()->node(x.node_id()).op;
  return op == Op::Input || op == Op::Contiguous ? x : x.buffered();
}

// The input padded once into a buffer, as seen by each of `o` output channels of a depthwise
// conv: with a channel multiplier m, output channel j reads input channel j / m. [N, O, HP, WP].
// `extra_rows` more zero rows at the bottom (past the windows: never read as taps).
Tensor depthwise_source(const Tensor& x, Pair padding, int64_t o, int64_t extra_rows = 0) {
  int64_t c = static_size(x, 1, "conv2d");
  Tensor source = x.pad({{Expr(0), Expr(0)}, {Expr(0), Expr(0)}, {Expr(padding[0]), Expr(padding[0] + extra_rows)},
                         {Expr(padding[1]), Expr(padding[1])}})
                      .contiguous();
  if (o == c) return source;
  const Expr &n = x.shape()[0], &rows = source.shape()[2], &wp = source.shape()[3];
  return source.unsqueeze(2).expand({n, Expr(c), Expr(o / c), rows, wp}).reshape({n, Expr(o), rows, wp});
}

// Depthwise conv2d (one input channel per group, any channel multiplier) with a larger kernel
// (5 x 5, 7 x 7) and strides up to 2: windows in output order, [N, O, OH, OW, KH·KW], one
// reduction over the taps. A channel's output row is a SIMD row (one masked vector for the 7-
// and 14-wide maps of mobilenet_v3) whose taps are loads of the input at i·d rows and j·d
// columns on, and the schedule unrolls output rows around the vector, so each row is an
// accumulator of its own (kernel/schedule_space vector_row_dim). The input is read through a
// padded view (masked loads at the borders), or padded once into a buffer first where there are
// more than 196 outputs a channel (the masks then cost more than the copy) or the input is
// computed channels-last (`channels_last`: the copy transposes it). Against the flattened form this replaces
// (positions over the padded width, the columns past OW computed and sliced off), in one
// process, 2 threads: 5 x 5 over 8 x 240 x 14² 1.30x, 1 x 240 x 14² 1.30x, 1 x 576 x 7² 1.12x,
// 5 x 5 / 2 over 8 x 96 x 28² 2.14x, 7 x 7 over 8 x 384 x 28² 1.24x and 4 x 64 x 56² 1.26x;
// mobilenet_v3_small 1.05x. (3 x 3 windows in this form: 1.00-1.10x alone, but mobilenet_v3_small
// 0.97x: they keep the inline sums.)
Tensor conv2d_depthwise_rows(const Tensor& x, const Tensor& weight, Pair stride, Pair padding, Pair dilation,
                             Pair out, bool channels_last) {
  int64_t c = static_size(x, 1, "conv2d"), o = static_size(weight, 0, "conv2d");
  int64_t kh = static_size(weight, 2, "conv2d"), kw = static_size(weight, 3, "conv2d");
  const bool copy = out[0] * out[1] > 196 || channels_last;
  // The copy has zero rows past the last window's, so that a SIMD row's lanes past the output's
  // end (up to 15 more columns, stride apart) still read inside the buffer on the last row: plain
  // loads, not masked ones (the CPU code generator checks this against the buffer's size).
  int64_t hp = static_size(x, 2, "conv2d") + 2 * padding[0], wp = static_size(x, 3, "conv2d") + 2 * padding[1];
  Tensor win;  // [N, C', OH, KH, OW, KW]
  if (copy) {
    Tensor source = depthwise_source(x, padding, o, (15 * stride[1] + wp - 1) / wp).slice(2, Expr(0), Expr(hp));
    win = windows(source, {kh, kw}, stride, {0, 0}, dilation, false, 0, "conv2d", &out);
  } else {
    win = windows(stored(x), {kh, kw}, stride, padding, dilation, false, 0, "conv2d", &out);
  }
  const Expr& n = x.shape()[0];
  if (!copy && o != c) {  // output channel j reads input channel j / m
    Shape each{n, Expr(c), Expr(o / c), Expr(out[0]), Expr(kh), Expr(out[1]), Expr(kw)};
    win = win.unsqueeze(2).expand(each).reshape({n, Expr(o), Expr(out[0]), Expr(kh), Expr(out[1]), Expr(kw)});
  }
  Tensor taps = win.permute({0, 1, 2, 4, 3, 5}).reshape({n, Expr(o), Expr(out[0]), Expr(out[1]), Expr(kh * kw)});
  auto [lhs, rhs] = promote(taps, weight.reshape({Expr(1), Expr(o), Expr(1), Expr(1), Expr(kh * kw)}));
  return lhs.mul(rhs).sum_reduce(4);  // [N, O, OH, OW]
}

// Depthwise conv2d (multiplier 1) of values computed channels-last (a pointwise conv's output
// and its activation): computed channels-last too, the channels in SIMD lanes. The padded input
// is copied as it is laid out (the activation fused into the copy, no transpose), each output
// position is KH·KW whole vectors of taps times a vector of weights, and the result stays
// channels-last for the next pointwise conv and the squeeze-excite means.
Tensor conv2d_depthwise_channels_last(const Tensor& x, const Tensor& weight, Pair stride, Pair padding, Pair dilation,
                                      Pair out) {
  int64_t c = static_size(x, 1, "conv2d");
  int64_t kh = static_size(weight, 2, "conv2d"), kw = static_size(weight, 3, "conv2d");
  Tensor win = windows(x.permute({0, 2, 3, 1}), {kh, kw}, stride, padding, dilation, false, 0, "conv2d", &out,
                       true);  // [N, OH, KH, OW, KW, C]
  const Expr& n = x.shape()[0];
  Tensor taps = win.permute({0, 1, 3, 2, 4, 5}).reshape({n, Expr(out[0]), Expr(out[1]), Expr(kh * kw), Expr(c)});
  Tensor w = weight.reshape({Expr(c), Expr(kh * kw)}).permute({1, 0}).reshape(
      {Expr(1), Expr(1), Expr(1), Expr(kh * kw), Expr(c)});
  auto [lhs, rhs] = promote(taps, w);
  return lhs.mul(rhs).sum_reduce(3).permute({0, 3, 1, 2});  // [N, C, OH, OW]
}

// Depthwise conv2d with a larger kernel and a stride above 1: a sum of
// KH·KW strided views of the input (padded once into a buffer), each times
// its weight broadcast over the positions, in one elementwise kernel with
// affine reads (mobilenet_v3's 5 x 5 stride-2 layers; the window matrix
// this replaces was indexed with a division per element).
Tensor conv2d_depthwise_taps(const Tensor& x, const Tensor& weight, Pair stride, Pair padding, Pair dilation, Pair out) {
  int64_t o = static_size(weight, 0, "conv2d");
  int64_t kh = static_size(weight, 2, "conv2d"), kw = static_size(weight, 3, "conv2d");
  Tensor source = depthwise_source(x, padding, o);
  Tensor sum;
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = 0; j < kw; ++j) {
      int64_t top = i * dilation[0], left = j * dilation[1];
      Tensor tap = source.slice(2, Expr(top), Expr(top + (out[0] - 1) * stride[0] + 1), stride[0])
                       .slice(3, Expr(left), Expr(left + (out[1] - 1) * stride[1] + 1), stride[1]);
      Tensor w = weight.slice(2, Expr(i), Expr(i + 1)).slice(3, Expr(j), Expr(j + 1)).reshape({Expr(1), Expr(o), Expr(1), Expr(1)});
      auto [lhs, rhs] = promote(tap, w);
      sum = sum.defined() ? sum.add(lhs.mul(rhs)) : lhs.mul(rhs);
    }
  }
  return sum;
}

// A pointwise convolution (1 x 1, stride 1, no padding, one group) is a matmul
// in NCHW as it stands: weights [O, C] times each image's [C, H·W] (positions
// contiguous, the SIMD dim), with no window copy and no transpose back.
Tensor conv2d_pointwise(const Tensor& x, const Tensor& weight, Pair out) {
  int64_t c = static_size(x, 1, "conv2d"), o = static_size(weight, 0, "conv2d");
  Tensor flat = x.reshape({x.shape()[0], Expr(c), Expr(out[0] * out[1])});
  return matmul(weight.reshape({Expr(o), Expr(c)}), flat).reshape({x.shape()[0], Expr(o), Expr(out[0]), Expr(out[1])});
}

// conv2d with the output positions as the SIMD dim: a contraction over
// K = Cg·KH·KW with the positions flattened into one dim, so the compiler sees
// [.., Og, OH·OW] x K like a matmul: windows [N, G, 1, OH·OW, K] times weights
// [1, G, Og, 1, K]. Output rows are computed padded to a multiple of 16
// positions when that costs at most a sixth more work: each row of window
// positions then starts on a SIMD lane boundary, so the window matrix is
// copied into panels with affine (vector) indices instead of a division per
// element. The extra columns read zero padding and are sliced off.
Tensor conv2d_positions(const Tensor& x, const Tensor& weight, Pair stride, Pair padding, Pair dilation, int64_t groups,
                        Pair out) {
  int64_t o = static_size(weight, 0, "conv2d"), cg = static_size(weight, 1, "conv2d");
  int64_t kh = static_size(weight, 2, "conv2d"), kw = static_size(weight, 3, "conv2d");
  int64_t ow = out[1], ow_padded = (ow + 15) / 16 * 16;
  bool pad_rows = ow_padded != ow && (ow_padded - ow) * 6 <= ow;
  Tensor source = pad_rows ? x.pad({{Expr(0), Expr(0)}, {Expr(0), Expr(0)}, {Expr(0), Expr(0)},
                                    {Expr(0), Expr((ow_padded - ow) * stride[1])}})
                           : x;
  Tensor win = windows(source, {kh, kw}, stride, padding, dilation, false, 0, "conv2d", &out);  // [N, C, OH, KH, OW, KW]
  Tensor a = window_matrix(win, groups, cg, out, kh, kw).unsqueeze(2);
  Tensor b = weight.reshape({Expr(1), Expr(groups), Expr(o / groups), Expr(1), Expr(cg * kh * kw)});
  auto [lhs, rhs] = promote(a, b);
  Tensor y = lhs.mul(rhs).sum_reduce(-1).reshape({x.shape()[0], Expr(o), Expr(out[0]), Expr(out[1])});
  return pad_rows ? y.slice(3, Expr(0), Expr(ow)) : y;
}

// Winograd's F(2 x 2, 3 x 3) (conv2d_winograd) where it pays: its transforms
// cost per output point and channel while it saves 5 of 9 multiply-adds per
// point and channel pair, so it needs enough channels to amortise them
// (resnet18 at 2 threads, in-process A/B: direct 10.2 ms, Winograd from 128
// channels 8.2 ms, from 64 channels 7.8 ms). The weight must be a parameter,
// so its transform is made once and kept: made every run, a 512-channel
// filter's transform costs half the 7² matmuls.
bool winograd_pays(const Tensor& weight, int64_t c, int64_t o, Pair kernel, Pair stride, Pair dilation, int64_t groups) {
  const Node& source = weight.graph()->node(weight.edge().node);
  bool fixed = source.op == Op::Input && source.parameter && !source.persistent;
  return fixed && kernel == Pair{3, 3} && stride == Pair{1, 1} && dilation == Pair{1, 1} && groups == 1 && c >= 64 &&
         o >= 64 && o % 16 == 0;
}

// A small constant matrix of integers, [rows, cols]: a select per entry, so
// kernels that read it in their inner loops get it `buffered` (made once a
// run: 64 bytes).
Tensor integer_matrix(Graph& g, const std::vector<std::vector<int64_t>>& rows, bool buffered) {
  int64_t r = static_cast<int64_t>(rows.size()), c = static_cast<int64_t>(rows[0].size());
  Shape s{Expr(r), Expr(c)};
  Expr flat = loop_index(s, 0) * c + loop_index(s, 1);
  Expr value = Expr(0);
  for (int64_t i = r * c - 1; i >= 0; --i) {
    int64_t v = rows[static_cast<size_t>(i / c)][static_cast<size_t>(i % c)];
    if (v != 0) value = select(eq(flat, Expr(i)), Expr(v), value);
  }
  Tensor matrix = g.iota(simplify(value), s, DType::I32).cast(DType::F32);
  return buffered ? matrix.buffered() : matrix;
}

// `matrix` [R, S] applied along axis `from` of `x` (extent S): the result has
// that axis removed and a new one of extent R at `to`,
// y[.., r at to, ..] = Σ_s matrix[r, s] · x[.., s at from, ..]. A contraction
// of extent S = 3 or 4, written out inline.
Tensor contract_axis(const Tensor& x, const Tensor& matrix, int from, int to) {
  int insert = to <= from ? to : to + 1, reduce = to <= from ? from + 1 : from;
  Tensor lhs = x.unsqueeze(insert);
  Shape ms(lhs.rank(), Expr(1));
  ms[static_cast<size_t>(insert)] = matrix.shape()[0];
  ms[static_cast<size_t>(reduce)] = matrix.shape()[1];
  Tensor coefficients = insert < reduce ? matrix : matrix.permute({1, 0});  // in the axes' order
  return lhs.mul(coefficients.reshape(ms)).sum_reduce(reduce);
}

// conv2d 3 x 3, stride 1, no dilation, one group, by Winograd's minimal
// filtering F(2 x 2, 3 x 3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2015): 4 x 4 input tiles d, overlapping by
// 2, give 2 x 2 outputs as Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A. The input, padded and
// copied channels-last, is cut into tiles and transformed (Bᵀ d B, channels
// in SIMD lanes); the filters are transformed once
// (G g Gᵀ, a value derived from the weight alone, which the compiler keeps
// between runs); the 16 elementwise products summed over the input channels
// are 16 matmuls [tiles, C] x [C, O]; the results go back to 2 x 2 outputs
// (Aᵀ M A), channels-last, which the consumer reads through a transpose as it
// reads conv2d_channels' output. A direct 3 x 3 conv takes 9 multiply-adds
// per output point and channel pair, this one 4, plus the transforms, which
// cost per point and channel rather than per channel pair.
Tensor conv2d_winograd(const Tensor& x, const Tensor& weight, Pair padding, Pair out) {
  constexpr int64_t m = 2, t = 4;  // outputs and inputs per tile side
  Graph& g = *x.graph();
  int64_t c = static_size(x, 1, "conv2d"), o = static_size(weight, 0, "conv2d");
  int64_t h = static_size(x, 2, "conv2d"), w = static_size(x, 3, "conv2d");
  int64_t th = (out[0] + m - 1) / m, tw = (out[1] + m - 1) / m;
  const Expr& n = x.shape()[0];
  // [N, TH·2 + 2, TW·2 + 2, C]: padded (zeros past the last tile too) and channels-last.
  Tensor source = x.pad({{Expr(0), Expr(0)}, {Expr(0), Expr(0)}, {Expr(padding[0]), Expr(th * m + 2 - h - padding[0])},
                         {Expr(padding[1]), Expr(tw * m + 2 - w - padding[1])}})
                      .permute({0, 2, 3, 1})
                      .buffered();
  const std::vector<std::vector<int64_t>> bt = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  Tensor at = integer_matrix(g, {{1, 1, 1, 0}, {0, 1, -1, -1}}, true);
  Tensor g2 = integer_matrix(g, {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}}, false);  // 2·G, read once
  Tensor tiles = source.unfold(1, t, m).unfold(3, t, m).permute({0, 1, 3, 2, 4, 5});  // [N, TH, TW, t(i), t(j), C]
  // Bᵀ d B in one pass over each tile: (Bᵀ ⊗ Bᵀ)[ξν, ij] = Bᵀ[ξ, i]·Bᵀ[ν, j] times its 16 inputs
  // (resnet18, 2 threads, against a row pass then a column pass: 10.08-10.34 -> 9.95-10.08 ms).
  std::vector<std::vector<int64_t>> bb;
  for (const auto& xi : bt) {
    for (const auto& nu : bt) {
      std::vector<int64_t> row;
      for (int64_t i : xi) {
        for (int64_t j : nu) row.push_back(i * j);
      }
      bb.push_back(row);
    }
  }
  Shape each{Expr(1), Expr(1), Expr(1), Expr(t * t), Expr(t), Expr(t), Expr(1)};
  Tensor v = tiles.unsqueeze(3).mul(integer_matrix(g, bb, true).reshape(each)).sum_reduce(5).sum_reduce(4);
  v = v.reshape({n * Expr(th * tw), Expr(t * t), Expr(c)}).permute({1, 0, 2});  // [N, TH, TW, ξν, C] -> [ξν, tiles, C]
  Tensor taps = weight.permute({2, 3, 1, 0});                        // [3(a), 3(b), C, O]
  Tensor u = contract_axis(contract_axis(taps, g2, 0, 0), g2, 1, 1);  // [ξ, ν, C, O], times 4
  u = u.mul(scalar_like(u, 0.25, u.dtype())).reshape({Expr(t * t), Expr(c), Expr(o)}).buffered();
  Tensor prod = matmul(v, u).reshape({Expr(t), Expr(t), n, Expr(th), Expr(tw), Expr(o)});  // [ξ, ν, N, TH, TW, O]
  Tensor cols = contract_axis(prod, at, 0, 3);  // [ν, N, TH, a, TW, O]
  Tensor y = contract_axis(cols, at, 0, 4);     // [N, TH, a, TW, b, O]
  y = y.reshape({n, Expr(th * m), Expr(tw * m), Expr(o)});
  return y.slice(1, Expr(0), Expr(out[0])).slice(2, Expr(0), Expr(out[1])).permute({0, 3, 1, 2});
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias, Pair stride, Pair padding,
              Pair dilation, int64_t groups) {
  check_rank(x, 4, "conv2d", "input [N, C, H, W]");
  check_rank(weight, 4, "conv2d", "weight [O, C/groups, KH, KW]");
  int64_t c = static_size(x, 1, "conv2d"), o = static_size(weight, 0, "conv2d");
  int64_t cg = static_size(weight, 1, "conv2d"), kh = static_size(weight, 2, "conv2d"), kw = static_size(weight, 3, "conv2d");
  if (groups < 1 || c % groups != 0 || o % groups != 0 || c / groups != cg) {
    fail("conv2d: input ", to_string(x.shape()), " with weight ", to_string(weight.shape()), " and groups=", groups,
         ": need C divisible by groups and weight.shape[1] == C/groups");
  }
  if (stride[0] < 1 || stride[1] < 1 || dilation[0] < 1 || dilation[1] < 1 || padding[0] < 0 || padding[1] < 0) {
    fail("conv2d: stride and dilation must be >= 1 and padding >= 0");
  }
  Pair out{};
  windows(x, {kh, kw}, stride, padding, dilation, false, 0, "conv2d", &out);  // checks the sizes
  const bool channels_last = computed_channels_last(x);
  if (kh == 1 && kw == 1 && padding == Pair{0, 0} && stride != Pair{1, 1} && !channels_last) {
    // A strided 1 x 1 conv of NCHW values reads every stride-th position: those positions (a
    // strided view), then an unstrided 1 x 1 conv (a pointwise matmul where the positions fill
    // SIMD rows; 4 x 64 x 56² -> 128 channels, 2 threads: 1.37x). Values computed channels-last
    // keep the channels form (resnet18's shortcuts: the add after them reads both paths alike).
    Tensor every = x.slice(2, Expr(0), Expr((out[0] - 1) * stride[0] + 1), stride[0])
                       .slice(3, Expr(0), Expr((out[1] - 1) * stride[1] + 1), stride[1]);
    return conv2d(every, weight, bias, {1, 1}, {0, 0}, {1, 1}, groups);
  }
  Tensor y;
  if (winograd_pays(weight, c, o, {kh, kw}, stride, dilation, groups)) {
    y = conv2d_winograd(x, weight, padding, out);
  } else if (kh == 1 && kw == 1 && stride == Pair{1, 1} && padding == Pair{0, 0} && groups == 1 &&
             (out[0] * out[1]) % 16 == 0 && (o % 16 != 0 || !channels_last)) {
    y = conv2d_pointwise(x, weight, out);
  } else if (cg == 1 && groups == c && o == c && c % 16 == 0 && channels_last) {
    y = conv2d_depthwise_channels_last(x, weight, stride, padding, dilation, out);
  } else if (cg == 1 && groups > 1 && kh <= kInlineWindow && kw <= kInlineWindow) {
    y = conv2d_depthwise(x, weight, stride, padding, dilation, out);
  } else if (cg == 1 && groups > 1 && stride[0] <= 2 && stride[1] <= 2) {
    y = conv2d_depthwise_rows(x, weight, stride, padding, dilation, out, channels_last);
  } else if (cg == 1 && groups > 1 && kh * kw <= kTapsInline) {
    y = conv2d_depthwise_taps(x, weight, stride, padding, dilation, out);
  } else if ((o / groups) % 16 == 0) {
    y = conv2d_channels(x, weight, stride, padding, dilation, groups, out);
  } else {
    y = conv2d_positions(x, weight, stride, padding, dilation, groups, out);
  }
  return bias ? add(y, bias->reshape({Expr(1), Expr(o), Expr(1), Expr(1)})) : y;
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  check_rank(x, 3, "conv1d", "input [N, C, L]");
  check_rank(weight, 3, "conv1d", "weight [O, C/groups, K]");
  Tensor y = conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, {1, stride}, {0, padding}, {1, dilation}, groups);
  return y.squeeze(2);
}

// x[t + start] for t in [0, length) along `axis`, zero outside x (a window of x, shifted).
Tensor shifted_window(const Tensor& x, int axis, int64_t start, int64_t length) {
  int64_t in = x.shape()[static_cast<size_t>(axis)].value();
  int64_t before = std::max<int64_t>(0, -start), after = std::max<int64_t>(0, start + length - in);
  Tensor padded = before > 0 || after > 0 ? pad_axis(x, axis, before, after) : x;
  return padded.slice(axis, Expr(start + before), Expr(start + before + length));
}

// conv_transpose2d with stride s > 1 (dilation 1) as s_h x s_w ordinary convolutions, one per
// output phase: output row s·q + r gathers the kernel rows k = k0, k0 + s, .. with k0 = (r + p)
// mod s, each reading input row q + (r + p - k) / s. So phase (r_h, r_w) is a stride-1 conv of
// the input, shifted, with those taps of the filter (flipped, channels swapped), and the phases
// interleave through a reshape. The zero-stuffed input the plain form convolves is 1 - 1/s² zeros:
// 64 -> 32 channels, 28² -> 56², 3x3 / 2, 2 threads: 5.5 ms (the stuffed input kept) -> 0.68 ms;
// 2x2 / 2: 5.1 -> 0.37 ms. `w_flipped`: [G·Og, Cg, KH, KW], flipped spatially.
Tensor conv_transpose2d_phases(const Tensor& x, const Tensor& w_flipped, Pair stride, Pair padding, Pair out,
                               int64_t groups) {
  int64_t kh = static_size(w_flipped, 2, "conv_transpose2d"), kw = static_size(w_flipped, 3, "conv_transpose2d");
  int64_t k[2] = {kh, kw};
  int64_t q[2] = {(out[0] + stride[0] - 1) / stride[0], (out[1] + stride[1] - 1) / stride[1]};
  const Expr& n = x.shape()[0];
  Expr o = w_flipped.shape()[0];
  std::vector<Tensor> rows;
  for (int64_t rh = 0; rh < stride[0]; ++rh) {
    std::vector<Tensor> row;
    for (int64_t rw = 0; rw < stride[1]; ++rw) {
      int64_t r[2] = {rh, rw};
      Tensor source = x, filter = w_flipped;
      bool empty = false;
      for (int d = 0; d < 2; ++d) {
        int64_t s = stride[d], k0 = ((r[d] + padding[d]) % s + s) % s;
        int64_t taps = k0 < k[d] ? (k[d] - 1 - k0) / s + 1 : 0;
        if (taps == 0) {
          empty = true;
          break;
        }
        // Tap t (0 .. taps-1) reads input q + a_first + t; in the flipped filter it is k - 1 - k0 - (taps - 1 - t)·s.
        int64_t a_first = (r[d] + padding[d] - k0) / s - (taps - 1);
        int64_t f_first = k[d] - 1 - k0 - (taps - 1) * s;
        source = shifted_window(source, 2 + d, a_first, q[d] + taps - 1);
        filter = filter.slice(2 + d, Expr(f_first), Expr(f_first + (taps - 1) * s + 1), s);
      }
      row.push_back(empty ? scalar_like(x, 0, x.dtype()).expand({n, o, Expr(q[0]), Expr(q[1])})
                          : conv2d(source, filter, std::nullopt, {1, 1}, {0, 0}, {1, 1}, groups));
    }
    std::vector<Tensor> columns;
    for (Tensor& t : row) columns.push_back(t.unsqueeze(4));
    rows.push_back(concat(columns, 4).unsqueeze(3));  // [N, O, Qh, 1, Qw, s_w]
  }
  Tensor y = concat(rows, 3).reshape({n, o, Expr(q[0] * stride[0]), Expr(q[1] * stride[1])});
  return y.slice(2, Expr(0), Expr(out[0])).slice(3, Expr(0), Expr(out[1]));
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias, Pair stride,
                        Pair padding, Pair output_padding, int64_t groups, Pair dilation) {
  check_rank(x, 4, "conv_transpose2d", "input [N, C, H, W]");
  check_rank(weight, 4, "conv_transpose2d", "weight [C, O/groups, KH, KW]");
  int64_t c = static_size(x, 1, "conv_transpose2d"), og = static_size(weight, 1, "conv_transpose2d");
  int64_t kh = static_size(weight, 2, "conv_transpose2d"), kw = static_size(weight, 3, "conv_transpose2d");
  if (groups < 1 || c % groups != 0 || static_size(weight, 0, "conv_transpose2d") != c) {
    fail("conv_transpose2d: input ", to_string(x.shape()), " with weight ", to_string(weight.shape()), " and groups=",
         groups, ": weight.shape[0] must equal C and C must be divisible by groups");
  }
  for (int d = 0; d < 2; ++d) {
    if (output_padding[d] >= std::max(stride[d], dilation[d])) {
      fail("conv_transpose2d: output_padding must be smaller than stride or dilation");
    }
  }
  // Weight [C, Og, KH, KW] -> [G·Og, Cg, KH, KW], flipped spatially.
  int64_t cg = c / groups;
  Tensor w = weight.reshape({Expr(groups), Expr(cg), Expr(og), Expr(kh), Expr(kw)})
                 .permute({0, 2, 1, 3, 4})
                 .reshape({Expr(groups * og), Expr(cg), Expr(kh), Expr(kw)})
                 .flip(2)
                 .flip(3);
  if (stride != Pair{1, 1} && dilation == Pair{1, 1}) {
    Pair out{};
    for (int d = 0; d < 2; ++d) {
      int64_t in = static_size(x, 2 + static_cast<size_t>(d), "conv_transpose2d"), k = d == 0 ? kh : kw;
      out[d] = (in - 1) * stride[d] - 2 * padding[d] + k + output_padding[d];
      if (out[d] < 1) fail("conv_transpose2d: input ", to_string(x.shape()), " gives an empty output");
    }
    Tensor y = conv_transpose2d_phases(x, w, stride, padding, out, groups);
    return bias ? add(y, bias->reshape({Expr(1), Expr(groups * og), Expr(1), Expr(1)})) : y;
  }
  // Insert stride-1 zeros between input elements (views: reshape, pad, reshape, slice).
  Tensor z = x;
  for (int d = 0; d < 2; ++d) {
    int axis = 2 + d;
    int64_t len = static_size(z, static_cast<size_t>(axis), "conv_transpose2d");
    if (stride[d] == 1) continue;
    Shape merged = z.shape();
    merged[static_cast<size_t>(axis)] = Expr(len * stride[d]);
    z = pad_axis(z.unsqueeze(axis + 1), axis + 1, 0, stride[d] - 1).reshape(merged);  // [.., x0, 0.., x1, 0.., ..]
    z = z.slice(axis, 0, (len - 1) * stride[d] + 1);
  }
  // Pad by dilation·(k-1) - padding (negative crops) plus output_padding at the end.
  std::vector<int64_t> pads = {dilation[1] * (kw - 1) - padding[1], dilation[1] * (kw - 1) - padding[1] + output_padding[1],
                               dilation[0] * (kh - 1) - padding[0], dilation[0] * (kh - 1) - padding[0] + output_padding[0]};
  z = pad(z, pads).contiguous();  // read by the conv as a plain buffer: the views above divide
  return conv2d(z, w, bias, {1, 1}, {0, 0}, dilation, groups);
}

Tensor max_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding, Pair dilation, bool ceil_mode) {
  check_rank(x, 4, "max_pool2d", "input [N, C, H, W]");
  if (!is_float(x.dtype())) fail("max_pool2d: needs a float tensor, got ", dtype_name(x.dtype()));
  for (int d = 0; d < 2; ++d) {
    if (padding[d] * 2 > kernel[d]) fail("max_pool2d: padding should be at most half the kernel size");
  }
  Pair out{};
  double lowest = -std::numeric_limits<double>::infinity();
  if (static_size(x, 1, "max_pool2d") % 16 == 0 && computed_channels_last(x)) {
    // Pooled channels-last, channels in SIMD lanes: the padded copy reads the values as they are
    // laid out, and the result is kept for its readers (resnet18, 2 threads: -5%; an NCHW input
    // pooled this way pays a transpose: 2x slower, so it keeps the form below).
    Tensor win = windows(x.permute({0, 2, 3, 1}), kernel, default_stride(stride, kernel), padding, dilation, ceil_mode,
                         lowest, "max_pool2d", &out, true);  // [N, OH, KH, OW, KW, C]
    return win.max_reduce(4).max_reduce(2).buffered().permute({0, 3, 1, 2});
  }
  Tensor win = windows(x, kernel, default_stride(stride, kernel), padding, dilation, ceil_mode, lowest, "max_pool2d", &out);
  return win.max_reduce(5).max_reduce(3);
}

Tensor avg_pool2d(const Tensor& x, Pair kernel, Pair stride, Pair padding, bool ceil_mode, bool count_include_pad) {
  check_rank(x, 4, "avg_pool2d", "input [N, C, H, W]");
  if (!is_float(x.dtype())) fail("avg_pool2d: needs a float tensor, got ", dtype_name(x.dtype()));
  Pair s = default_stride(stride, kernel), out{};
  Tensor sums = windows(x, kernel, s, padding, {1, 1}, ceil_mode, 0, "avg_pool2d", &out).sum_reduce(5).sum_reduce(3);
  // Divisor per window, as PyTorch counts it: the window clipped to the padded
  // input (count_include_pad) or to the input itself.
  Graph& g = *x.graph();
  Tensor count;
  for (int d = 0; d < 2; ++d) {
    int64_t in = static_size(x, 2 + static_cast<size_t>(d), "avg_pool2d");
    Shape shape = d == 0 ? Shape{Expr(out[0]), Expr(1)} : Shape{Expr(1), Expr(out[1])};
    Expr o = loop_index(shape, static_cast<size_t>(d));
    Expr begin = o * s[d] - padding[d];
    Expr end = min(begin + kernel[d], Expr(in + padding[d]));
    Expr length = count_include_pad ? end - begin : min(end, Expr(in)) - max(begin, Expr(0));
    Tensor part = g.iota(simplify(length), shape, DType::I32);
    count = count.defined() ? count.mul(part) : part;
  }
  return sums / count.cast(x.dtype());
}

Tensor adaptive_avg_pool2d(const Tensor& x, Pair output_size) {
  check_rank(x, 4, "adaptive_avg_pool2d", "input [N, C, H, W]");
  if (output_size[0] < 1 || output_size[1] < 1) fail("adaptive_avg_pool2d: output size must be positive");
  int64_t h = static_size(x, 2, "adaptive_avg_pool2d"), w = static_size(x, 3, "adaptive_avg_pool2d");
  if (is_float(x.dtype()) && h % output_size[0] == 0 && w % output_size[1] == 0) {
    // Windows that tile the input: a mean over each, read through a reshape, instead of two
    // matmuls with averaging matrices (8 x 64 x 28² to 7², 2 threads: 4.6x); a global pool is
    // one mean over the merged positions.
    if (output_size == Pair{1, 1}) return mean(x, {2, 3}, true);
    int64_t kh = h / output_size[0], kw = w / output_size[1];
    Tensor windows =
        x.reshape({x.shape()[0], x.shape()[1], Expr(output_size[0]), Expr(kh), Expr(output_size[1]), Expr(kw)});
    return windows.sum_reduce(5).sum_reduce(3) * (1.0 / static_cast<double>(kh * kw));
  }
  Graph& g = *x.graph();
  Tensor rows = adaptive_matrix(g, h, output_size[0], x.dtype());           // [OH, H]
  Tensor cols = adaptive_matrix(g, w, output_size[1], x.dtype());           // [OW, W]
  return matmul(matmul(rows, x), cols.transpose(0, 1));                     // [N, C, OH, OW]
}

Tensor interpolate(const Tensor& x, std::optional<Pair> size, std::optional<std::array<double, 2>> scale_factor,
                   const std::string& mode, bool align_corners) {
  check_rank(x, 4, "interpolate", "input [N, C, H, W]");
  int64_t h = static_size(x, 2, "interpolate"), w = static_size(x, 3, "interpolate");
  Pair out{};
  std::array<double, 2> scale{};  // source step per output element
  if (size) {
    out = *size;
    scale = {static_cast<double>(h) / static_cast<double>(out[0]), static_cast<double>(w) / static_cast<double>(out[1])};
  } else if (scale_factor) {
    out = {static_cast<int64_t>(std::floor(static_cast<double>(h) * (*scale_factor)[0])),
           static_cast<int64_t>(std::floor(static_cast<double>(w) * (*scale_factor)[1]))};
    scale = {1.0 / (*scale_factor)[0], 1.0 / (*scale_factor)[1]};
  } else {
    fail("interpolate: give either size or scale_factor");
  }
  if (out[0] < 1 || out[1] < 1) fail("interpolate: output size must be positive");
  Graph& g = *x.graph();
  if (mode == "nearest") {
    Tensor r = x;
    for (int d = 0; d < 2; ++d) {
      int axis = 2 + d;
      int64_t in = d == 0 ? h : w;
      // floor(i · scale), clamped; exact in integers when the scale is in/out.
      auto source = [&](int64_t i) {
        if (size) return std::min(i * in / out[d], in - 1);
        float at = std::floor(static_cast<float>(i) * static_cast<float>(scale[d]));
        return std::min(static_cast<int64_t>(at), in - 1);
      };
      if (auto view = nearest_view(r, axis, in, out[d], source)) {
        r = *view;
        continue;
      }
      Shape s{Expr(out[d])};
      Expr src = size ? min((loop_index(s, 0) * in) / out[d], Expr(in - 1)) : Expr();
      Tensor index;
      if (src.defined()) {
        index = g.iota(simplify(src), s, DType::I32);
      } else {
        Tensor i = g.iota(loop_index(s, 0), s, DType::I32).cast(DType::F32);
        index = minimum(floor(i * scale[d]), g.constant(static_cast<double>(in - 1), DType::F32)).cast(DType::I32);
      }
      r = r.gather(index, axis);
    }
    return r;
  }
  if (mode != "bilinear") fail("interpolate: unknown mode '", mode, "' (use nearest or bilinear)");
  if (!is_float(x.dtype())) fail("interpolate: bilinear needs a float tensor");
  Tensor r = x;
  for (int d = 0; d < 2; ++d) {
    int64_t in = d == 0 ? h : w;
    // Upsampling by a whole factor k (the scale exactly 1/k): output k·m + p blends two
    // neighbours of input m at weights that depend on p alone (bilinear_by_phases); other
    // sizes multiply by an interpolation matrix (two taps a row, stored dense).
    bool whole = !align_corners && out[d] % in == 0 && out[d] > in &&
                 scale[d] == 1.0 / static_cast<double>(out[d] / in);
    if (whole) {
      r = bilinear_by_phases(r, 2 + d, out[d] / in);
    } else if (d == 0) {
      r = matmul(bilinear_matrix(g, h, out[0], scale[0], align_corners, x.dtype()), r);
    } else {
      r = matmul(r, bilinear_matrix(g, w, out[1], scale[1], align_corners, x.dtype()).transpose(0, 1));
    }
  }
  return r;
}

}  // namespace lumen::ops
