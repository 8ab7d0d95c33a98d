#include "lumen/kernel/schedule_space.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

#include "lumen/core/debug_flags.h"
#include "lumen/core/error.h"
#include "lumen/core/expr_eval.h"
#include "lumen/core/linear_form.h"
#include "lumen/core/simplify.h"
#include "lumen/kernel/lower.h"

namespace lumen::kernel {

namespace {
std::vector<int64_t> divisors_in(int64_t n, std::initializer_list<int64_t> choices) {
  std::vector<int64_t> out;
  for (int64_t c : choices) {
    if (c >= 1 && c <= n && n % c == 0) out.push_back(c);
  }
  return out;
}

// The points past n that tiles of `c` over n points compute (the last tile's overhang).
int64_t overhang(int64_t n, int64_t c) { return (n + c - 1) / c * c - n; }

// Tiles of `c` over n points whose last tile overhangs by at most 1/25 of n
// (the overhang is clamped to the last point and computed again).
bool nearly_divides(int64_t c, int64_t n) { return c >= 1 && c <= n && overhang(n, c) * 25 <= n; }

// Register-tile row counts for a dim of extent m: divisors, and for a static m
// also counts whose last tile's overhanging rows (clamped, computed twice) add
// at most an eighth of the work: a 6-row tile beats a 4-row one by ~20% on
// AVX-512, so 49 positions (a 7 x 7 convolution) take 6 rows (54 computed)
// rather than 2 (8 accumulators, half the FMA throughput).
std::vector<int64_t> tile_rows_in(const Expr& m, std::initializer_list<int64_t> choices) {
  if (!m.is_const()) return divisors_in(known_factor(m), choices);
  std::vector<int64_t> out;
  for (int64_t c : choices) {
    int64_t n = m.value();
    if (c >= 1 && c <= n && overhang(n, c) * 8 <= n) out.push_back(c);
  }
  return out;
}

// Panel widths for a tile whose columns the lanes do not divide, widest first: those whose last
// panel overhangs N by at most a sixteenth of N (one vector always qualifies past 16 vectors).
std::vector<int64_t> overhanging_panels(const KernelFacts& f) {
  int64_t n = f.shape.back().value(), l = f.lanes;
  std::vector<int64_t> out;
  for (int64_t w : {4 * l, 3 * l, 2 * l, l}) {
    if (overhang(n, w) * 16 <= n) out.push_back(w);
  }
  if (out.empty()) out.push_back(l);
  return out;
}

// A float contraction whose output rows run in SIMD lanes (not an int8 dot product, whose
// byte blocks are tuned on their own): what the row knobs below apply to.
bool float_contraction_in_lanes(const KernelFacts& f) {
  return f.vector_last && f.contraction >= 0 && !f.byte_rows && !f.byte_groups;
}

// The output dim a contraction computed one SIMD vector at a time unrolls around
// its vector: the shared row dim, else the innermost static dim before the last
// (its outputs share no vector, but each is an accumulator of its own, so a
// short row's reduction is not one chain of dependent adds). -1: none.
int vector_row_dim(const KernelFacts& f) {
  if (f.shared_row_dim >= 0) return f.shared_row_dim;
  for (auto d = static_cast<int>(f.shape.size()) - 2; d >= 0; --d) {
    const Expr& e = f.shape[static_cast<size_t>(d)];
    if (e.is_const() && e.value() >= 2) return d;
  }
  return -1;
}

// Row counts for a contraction computed one SIMD vector at a time: outputs of
// that many rows of the vector row dim unrolled around the vector, each its
// own accumulator; along the shared row dim all read each vector of the other
// operand once (a register tile without a pack: the reduction's vectors come
// from L1 once per tile instead of once per output vector).
std::vector<int64_t> vector_row_counts(const KernelFacts& f) {
  if (!float_contraction_in_lanes(f) || vector_row_dim(f) < 0) return {};
  const Expr& m = f.shape[static_cast<size_t>(vector_row_dim(f))];
  if (!m.is_const() || m.value() < 2) return {};
  return divisors_in(m.value(), {4, 7, 6, 5, 3, 2});
}

// SIMD widths of 2 or 4 vectors for a static row the lanes do not divide whose
// last vector overhangs the row's end no further than one vector's would (a
// depthwise conv's 252-wide padded rows: 4 vectors overhang by 4, as 16 single
// vectors do): several accumulators, each broadcast shared, no more work.
// (A row the lanes divide gets only widths that divide it too, as divisors_in gives.)
std::vector<int64_t> overhanging_widths(const KernelFacts& f) {
  const Expr& last = f.shape.back();
  if (!f.vector_last || !last.is_const()) return {};
  int64_t n = last.value(), l = f.lanes;
  std::vector<int64_t> out;
  for (int64_t w : {4 * l, 2 * l}) {
    if (w <= n && overhang(n, w) <= overhang(n, l)) out.push_back(w);
  }
  return out;
}
}  // namespace

bool Knobs::operator==(const Knobs& o) const {
  return mr == o.mr && nr == o.nr && pack == o.pack && pack_inline == o.pack_inline && n_outer == o.n_outer && m_block == o.m_block && vector == o.vector &&
         reduce_lanes == o.reduce_lanes && reduce_unroll == o.reduce_unroll && reduce_split == o.reduce_split && parallel == o.parallel && rows == o.rows &&
         prefetch == o.prefetch && rfactor == o.rfactor && block == o.block && gpu_reduce == o.gpu_reduce &&
         gpu_group == o.gpu_group && pair_dot == o.pair_dot;
}

std::string Knobs::to_string() const {
  std::ostringstream out;
  if (nr > 0) {
    out << "tile " << mr << "x" << nr << (pack ? " packed" : "") << (pack && pack_inline ? " inline" : "") << (pair_dot ? " bf16-pairs" : "")
        << (n_outer ? " n-outer" : " m-outer");
    if (m_block > 1) out << " m-block " << m_block;
  } else {
    out << "vector " << vector;
    if (rows > 1) out << " rows " << rows;
  }
  out << " reduce-lanes " << reduce_lanes << " reduce-unroll " << reduce_unroll << " parallel " << parallel;
  if (reduce_split > 1) out << " reduce-split " << reduce_split;
  if (prefetch > 0) out << " prefetch " << prefetch;
  if (rfactor > 1) out << " rfactor " << rfactor;
  if (block > 0) out << " block " << block;
  if (gpu_reduce >= 0 || gpu_group > 0) out << " gpu " << gpu_reduce << "/" << gpu_group;
  return out.str();
}

// rfactor part counts for a kernel: enough parts that the threads share them
// evenly, each a whole number of SIMD steps of its reduction. A reduction that
// strides through memory (a column sum) is also cut on one thread: each part's
// rows then stay in cache while its columns are walked.
std::vector<int64_t> rfactor_parts(const KernelFacts& f, int64_t reduce_lanes) {
  std::vector<int64_t> out;
  if (f.rfactor_extent == 0 || (f.threads < 2 && f.unit_reduce)) return out;
  for (int64_t per_thread : {1, 2, 4, 8, 16, 32}) {
    int64_t p = per_thread * f.threads;
    if (p >= 2 && p <= kMaxRfactor && f.rfactor_extent % (p * reduce_lanes) == 0) out.push_back(p);
  }
  return out;
}

Knobs heuristic_knobs(const KernelFacts& f) {
  Knobs k;
  if (f.shape.empty()) {
    k.parallel = -1;
    if (f.unit_reduce) k.reduce_lanes = f.lanes;
  } else if (f.tileable) {
    const Expr& m = f.shape[static_cast<size_t>(f.row_dim)];
    // Columns: four vectors if they divide N, else the widest of 3 to 7
    // vectors that does (N = 784: 7), else two or one. Rows: up to 6, as many
    // as keep the accumulators within 24 registers.
    int64_t l = f.lanes;
    std::vector<int64_t> widths = divisors_in(known_factor(f.shape.back()), {4 * l, 7 * l, 6 * l, 5 * l, 3 * l, 2 * l, l});
    // Columns the lanes do not divide: the widest panels whose last one overhangs N by at most a
    // sixteenth of it (1,500 frames: four vectors, 1,536 computed; 197 keys: one vector, 208).
    if (f.tile_overhangs) widths = overhanging_panels(f);
    k.nr = widths.front();
    // A packed K x nr panel larger than L2 is read from L3 again for every
    // row tile (a 512-channel 3x3 convolution at 7x7: K = 4608, 1.2 MB at
    // nr = 64): narrower panels that fit, down to two vectors.
    if (f.tileable && f.pack_operand >= 0 && f.l2_bytes > 0 && f.contraction_extent > 0) {
      for (int64_t w : widths) {
        if (w < k.nr && w >= 2 * l && f.contraction_extent * k.nr * 4 > f.l2_bytes) k.nr = w;
      }
    }
    // Few rows that seven divides (at most 16 tiles of seven: a 7 x 7 map's 49 positions, the 7 or 14
    // rows of a depthwise conv over a 7 x 7 or 14 x 14 map) take tiles of seven rows, none padded, with
    // columns of three vectors where three divide them (21 accumulators), or of fewer where no other
    // row count tiles the rows (seven rows: each tile was one row). Mobilenet_v3_small, 2 threads: a
    // 5 x 5 depthwise conv over 576 x 7², 0.031 -> 0.012 ms; the model 1.07-1.08x in-process; resnet18
    // unchanged.
    if (m.is_const() && m.value() % 7 == 0 && m.value() <= 7 * 16 && k.nr > 3 * l) {
      bool no_rows = tile_rows_in(m, {6, 4, 3, 2}).empty();
      auto narrow = std::find_if(widths.begin(), widths.end(),
                                 [&](int64_t w) { return w == 3 * l || (no_rows && w < 3 * l); });
      if (narrow != widths.end()) k.nr = *narrow;
    }
    int64_t most_rows = std::max<int64_t>(1, 24 / (k.nr / l));
    // Seven rows where they divide the rows exactly and fit (49 positions of a 7 x 7 map at nr = 2 vectors).
    bool seven = most_rows >= 7 && m.is_const() && m.value() % 7 == 0;
    auto mrs = seven ? std::vector<int64_t>{7} : tile_rows_in(m, {6, 4, 3, 2});
    // One-vector panels over columns that overhang: twelve or eight rows keep the FMA units busy.
    if (f.tile_overhangs && k.nr == l && !seven) {
      std::vector<int64_t> more = tile_rows_in(m, {12, 8});
      mrs.insert(mrs.begin(), more.begin(), more.end());
    }
    // Tiles over a short static contraction (K <= 128: attention scores, K = a head) run m-outer:
    //  - the output is written row after row (n-outer writes it a column strip at a time: with
    //    one-vector tiles, a line a row and a page a line once rows are 4 KB);
    //  - the parallel loop takes row tiles, so a causal mask's live tiles are shared evenly
    //    (n-outer gave each thread a range of key blocks, and the blocks past the diagonal
    //    are all masked: one thread idled).
    // Llama-110M 1024-token prefill, scores: 58-88 -> 36-40 ms. Causal attention with plain ops,
    // S = 4096, 2 threads: 76 -> 56 ms; non-causal 97 -> 89-93 ms.
    if (f.contraction_static && f.contraction_extent > 0 && f.contraction_extent <= 128) k.n_outer = false;
    auto fits = std::find_if(mrs.begin(), mrs.end(), [&](int64_t r) { return r <= most_rows; });
    k.mr = fits == mrs.end() ? 1 : *fits;
    // Six-row tiles that pad a few rows by more than a fiftieth (128 rows: 132 computed) give way to
    // eight-row tiles three vectors wide (24 accumulators too) where eight divide the rows and three
    // vectors the columns. GPT-2 block at 128 positions, 2 threads: 1.03-1.05x in-process (its
    // [128, 768] x [768, 3072] 1.04x); 256 rows (258 computed) measured the same either way.
    if (k.mr == 6 && k.nr == 4 * l && m.is_const() && m.value() % 8 == 0 &&
        overhang(m.value(), 6) * 50 > m.value() && known_factor(f.shape.back()) % (3 * l) == 0) {
      k.mr = 8;
      k.nr = 3 * l;
    }
    k.pack = f.pack_operand >= 0;
    // A bf16 contraction on a CPU with vdpbf16ps: two k per instruction.
    k.pair_dot = f.pair_dot;
    // The reduction loop unrolled twice: its counter and branch take fewer
    // of the FMA ports' issue slots (+5% on a 6x64 tile, measured).
    k.reduce_unroll = 2;
    // Window indices (r / 9, r % 3 of a 3x3 convolution) on loop variables.
    if (!f.reduce_splits.empty()) k.reduce_split = f.reduce_splits.back();
  } else {
    if (f.vector_last) k.vector = f.lanes;
    // A contraction without a tile (a decode step's probabilities times values): up to four
    // vectors of outputs share each broadcast load of the other operand, one reduction loop.
    if (f.vector_last && (f.contraction >= 0 || f.byte_rows)) {
      auto widths = divisors_in(known_factor(f.shape.back()), {4 * f.lanes, 2 * f.lanes, f.lanes});
      if (!widths.empty()) k.vector = widths.front();
    }
    // A depthwise conv's taps (r / 5, r % 5 of a 5 x 5 window) on loop variables, as in a tile
    // (mobilenet_v3_small's 5 x 5 convs, 240 x 14²: 0.075 -> 0.041 ms). Only for rows in SIMD
    // lanes (a scalar global average pool unrolled over its rows ran slower), and not for int8
    // dot products, whose block indices are tuned on their own.
    if (float_contraction_in_lanes(f) && !f.reduce_splits.empty()) k.reduce_split = f.reduce_splits.back();
    // A contraction one vector wide (rows the lanes do not divide: mobilenet_v3_small's 28-wide
    // maps under a pointwise conv): outputs that share the vectors read (its output channels)
    // unrolled around the vector, each vector loaded once for all of them.
    // Else, when no width divides its row, several vectors of the row whose last one overhangs no
    // further than a single vector's: their accumulators share each broadcast (mobilenet_v3_small's
    // 5 x 5 depthwise convs over 14 x 14, rows of 252 in the padded layout).
    // And without a shared dim, rows that share nothing, each an accumulator of its own, until
    // the vectors and rows make four: a depthwise conv's output rows would otherwise add their
    // taps in one or two chains (5 x 5 over 8 x 240 x 14², one vector a row: seven rows, 0.337 ->
    // 0.278 ms; over 4 x 64 x 56², two vectors a row: two rows, 0.463 -> 0.317 ms; 2 threads, in
    // one process), and the compiler keeps a row's input vectors in registers for the next.
    if (k.vector == f.lanes && f.transposed_dim < 0 && float_contraction_in_lanes(f)) {  // (transposes: blocks below)
      auto counts = vector_row_counts(f);
      auto widths = overhanging_widths(f);
      if (!counts.empty() && f.shared_row_dim >= 0) {
        k.rows = counts.front();
      } else {
        if (!widths.empty()) k.vector = widths.front();
        const int64_t need = (4 * f.lanes + k.vector - 1) / k.vector;  // rows for four accumulators
        for (int64_t c : counts) {
          if (c >= need && (k.rows == 1 || c < k.rows)) k.rows = c;
        }
        if (k.rows == 1 && need > 1 && !counts.empty()) k.rows = *std::max_element(counts.begin(), counts.end());
      }
    }
    if (f.unit_reduce) k.reduce_lanes = f.lanes;
    // A plain row reduction (a max, a sum) whose rows are two or more whole steps of four vectors: four
    // vectors a step, each its own accumulator (a chain of adds or maxes each, in the CPU code
    // generator), where one vector a step is one chain. Row max of 2048 x 2048, 2 threads:
    // 0.158 -> 0.106 ms; row sum 0.101 -> 0.092 ms; channel means of 32 x 64 x 56² (the
    // positions' sum inside the batch's) 0.432 -> 0.366 ms (in one process).
    if (f.unit_reduce && !f.vector_last && f.contraction < 0 && !f.byte_groups && f.unit_reduce_extent >= 8 * f.lanes &&
        f.unit_reduce_extent % (4 * f.lanes) == 0) {
      k.reduce_lanes = 4 * f.lanes;
    }
    // A load index or mask with a period of 2-4 vectors along the reduction (the low and
    // high nibbles of packed 4-bit weights: (r / 16) % 2 over lanes of 16): the lanes span
    // the period, so each vector of them sees its digit as a constant.
    if (k.reduce_lanes > 1 && f.lane_period > k.reduce_lanes) k.reduce_lanes = f.lane_period;
    // A scalar row's reduction whose index divides (a global average pool over a padded
    // conv output's 14 x 14 positions): lanes over the split's inner part.
    if (!f.vector_last && !f.unit_reduce && !f.byte_groups && f.split_lanes > 0) {
      k.reduce_lanes = f.lanes;
      k.reduce_split = f.split_lanes;
    }
    // Matrix-vector products: four rows at a time share each load of the vector.
    int64_t last_factor = known_factor(f.shape.back());
    if (!f.vector_last && f.unit_reduce && f.contraction >= 0 && last_factor > 0 && last_factor % 4 == 0) k.rows = 4;
    // Integer dot products share more per row than float ones (the activation's bytes, sums and
    // block scales): eight rows (SmolLM2 Q4_1 decode, 1 thread, all kernels: 6.98 -> 5.75 ms and
    // 7.70 -> 6.69 ms against four rows; sixteen were slower than eight).
    if (k.rows == 4 && f.byte_groups && last_factor % 8 == 0) k.rows = 8;
  }
  // Work counts evaluations of computed nodes; a reduction of an input counts
  // once per output, so the elements it loads count too.
  bool big = f.numel >= 4096 || f.work >= 65536 || f.loads >= 65536;
  if (!f.shape.empty()) k.parallel = f.threads > 1 && big ? 0 : -1;
  // Too few outputs to share among the threads (a sum of everything, the
  // norms of a few long rows): the reduction itself is cut into parts.
  if (k.nr == 0 && f.loads >= (1 << 18) && f.numel < 4.0 * f.threads) {
    // Each part sums into four vectors: four independent add chains, so the
    // loads rather than the adds' latency set the pace.
    // (Sum of 4096^2, 2 threads: 0.91 -> 0.78 ms.)
    if (f.unit_reduce && k.reduce_lanes == f.lanes && !rfactor_parts(f, 4 * f.lanes).empty()) k.reduce_lanes = 4 * f.lanes;
    auto parts = rfactor_parts(f, k.reduce_lanes);
    if (!parts.empty()) {
      k.rfactor = parts[std::min<size_t>(2, parts.size() - 1)];
      k.parallel = -1;
    }
  }
  // A reduction down columns (strided; the outputs are SIMD along the rows):
  // cut into parts of about 128 rows, so a part's block stays in cache while
  // its column strips are walked, and the strips widened to 4 vectors (each
  // row read is 256 bytes). Column sum of 4096x4096, 1 thread: 15.5 -> 3.4 ms.
  // A reduction of at most 256 rows (ViT's 64-long q.k dot products) is not
  // cut: its parts would hold a few dozen rows and add a combining pass.
  if (k.vector > 0 && !f.unit_reduce && f.loads >= (1 << 18) && f.rfactor_extent > 256) {
    auto parts = rfactor_parts(f, 1);
    auto rows = [&](int64_t p) { return std::abs(static_cast<double>(f.rfactor_extent) / static_cast<double>(p) - 128); };
    if (!parts.empty()) k.rfactor = *std::min_element(parts.begin(), parts.end(), [&](int64_t a, int64_t b) { return rows(a) < rows(b); });
    auto widths = divisors_in(known_factor(f.shape.back()), {4 * f.lanes, 2 * f.lanes, f.lanes});
    if (!widths.empty()) k.vector = widths.front();  // a dynamic row keeps one masked vector
  }
  // Reads through a transpose: the output in squares of one vector by one
  // vector, so the input lines a square reads are reused from L1 (2048^2
  // transpose, 2 threads: 12.9 -> 1.3 ms; squares of 32 or 64: 1.8-2.1 ms).
  // A last dim the squares do not divide (resnet18's 56-wide maps) ends in
  // an overhanging square, its columns clamped (the residual sum + ReLU read
  // channels-last: resnet18 7.50 -> 7.24 ms, in-process A/B).
  if (f.transposed_dim >= 0 && k.nr == 0 && k.rows == 1 && k.rfactor == 1 && f.numel >= 4096) {
    int64_t tf = known_factor(f.shape[static_cast<size_t>(f.transposed_dim)]), lf = known_factor(f.shape.back());
    if (tf >= f.lanes && lf > f.lanes && tf % f.lanes == 0) k.block = k.vector = f.lanes;
  }
  // Row kernels (softmax, norms) over big inputs: the next rows' reads start
  // early (softmax 4096², 2 threads: 6.2 -> 4.3 ms). Matrix-vector products
  // over weights: the next rows stream in the same way, which a weight file
  // mapped in small pages needs (Q8_0 decode of a 110M Llama, 1 thread: 40 ->
  // 64 tokens/s), but a matrix in huge pages streams faster without (4096 x
  // 11008 from a numpy array, 2 threads: 5.67 -> 5.48 ms). On one thread too.
  bool rows_of_reductions = k.nr == 0 && (k.vector > 0 || (k.rows > 1 && f.reads_parameter)) && k.reduce_lanes > 1 &&
                            k.rfactor == 1;
  // (Integer dot products over weight bytes count few ops for the bytes they read: their loads decide.)
  if (rows_of_reductions && (f.work >= (1 << 20) || (f.reads_parameter && k.rows > 1 && f.loads >= (1 << 16)))) k.prefetch = 2;
  return k;
}

Knobs traced_heuristic_knobs(const Graph& graph, const KernelFacts& facts) {
  Knobs knobs = heuristic_knobs(facts);
  if (debug_enabled("schedules")) {  // LUMEN_DEBUG=schedules: the heuristic's point for every kernel
    std::fprintf(stderr,
                 "schedule: node %lld (%s) %s: %s (vector_last %d unit_reduce %d contraction %lld tileable %d "
                 "transposed_dim %d)\n",
                 static_cast<long long>(facts.node), op_name(graph.node(facts.node).op), to_string(facts.shape).c_str(),
                 knobs.to_string().c_str(), facts.vector_last, facts.unit_reduce, static_cast<long long>(facts.contraction),
                 facts.tileable, facts.transposed_dim);
  }
  return knobs;
}

std::vector<Action> knob_actions(const KernelFacts& f, const Knobs& k) {
  Schedule s(f.shape);
  std::vector<Action> actions;
  auto apply = [&](const Action& a) {
    s.apply(a);
    actions.push_back(a);
  };
  int rank = static_cast<int>(f.shape.size());
  if (k.rfactor > 1) {
    if (f.rfactor_extent == 0 || f.rfactor_extent % k.rfactor != 0 || k.nr > 0) {
      fail("schedule space: kernel ", f.node, " has no reduction that ", k.rfactor, " parts divide");
    }
    apply(Action::rfactor(k.rfactor));
  }
  if (rank == 0) {
    if (k.reduce_lanes > 1) apply(Action::reduce_lanes(k.reduce_lanes));
    if (k.reduce_unroll > 1) apply(Action::reduce_unroll(k.reduce_unroll));
    return actions;
  }
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
  const Expr& last = f.shape.back();
  if (k.nr > 0) {
    if (!f.tileable) fail("schedule space: kernel ", f.node, " takes no register tile");
    if (rank < 2) fail("schedule space: a tile needs two dims");
    const int rows = f.row_dim;
    const Expr& m = f.shape[static_cast<size_t>(rows)];
    if (k.pack) {
      if (f.pack_operand < 0) fail("schedule space: kernel ", f.node, " has no operand to pack");
      apply(Action::pack(f.pack_operand, k.nr));
      if (k.pack_inline && !f.one_sum_axis) fail("schedule space: kernel ", f.node, " sums several axes: no pack_inline");
      if (k.pack_inline) apply(Action::pack_inline(f.pack_operand));
      if (k.pair_dot) {
        if (!f.pair_dot || k.pack_inline) fail("schedule space: kernel ", f.node, " takes no pair_dot here");
        apply(Action::pair_dot(f.pack_operand));
      }
    } else if (k.pack_inline || k.pair_dot) {
      fail("schedule space: pack_inline or pair_dot without a pack");
    }
    bool split_n = !last.is_const() || k.nr < last.value();
    if (split_n) apply(Action::split(loop_of(rank - 1, false), k.nr));
    if (k.m_block > 1) {  // [M / (mr * b), N / nr, b, mr, nr]
      int64_t block_rows = k.mr * k.m_block;
      if (!k.n_outer || !m.is_const() || block_rows >= m.value() || !nearly_divides(block_rows, m.value())) {
        fail("schedule space: an m block of ", block_rows, " rows needs n-outer tiles and a static M above it that it ",
             "nearly divides, M = ", m);
      }
      apply(Action::split(loop_of(rows, false), block_rows));
      if (k.mr > 1) apply(Action::split(loop_of(rows, true), k.mr));
      int blocks = loop_of(rows, false), panels = loop_of(rank - 1, false);
      if (split_n && panels != blocks + 1) apply(Action::reorder(panels, blocks + 1));
    } else {
      if (k.mr > 1 && (!m.is_const() || k.mr < m.value())) apply(Action::split(loop_of(rows, false), k.mr));
      if (k.n_outer && split_n && loop_of(rank - 1, false) > loop_of(rows, false)) {
        apply(Action::reorder(loop_of(rank - 1, false), loop_of(rows, false)));
      }
    }
    int m_inner = loop_of(rows, true), n_inner = loop_of(rank - 1, true);
    if (k.mr > 1 && m_inner != n_inner - 1) apply(Action::reorder(m_inner, n_inner - 1));
    apply(Action::set_kind(loop_of(rank - 1, true), LoopKind::Vector));  // innermost first: lanes nest inward
    if (k.mr > 1) apply(Action::set_kind(loop_of(rows, true), LoopKind::Unroll));
  } else {
    if (k.block > 0) {  // [.., t / b, .., last / b, t % b, last % b]
      int t = f.transposed_dim;
      if (t < 0) fail("schedule space: kernel ", f.node, " reads nothing through a transpose to block");
      int64_t tf = known_factor(f.shape[static_cast<size_t>(t)]), lf = known_factor(last);
      if (tf == 0 || lf == 0 || tf % k.block != 0 || lf <= k.block) {
        fail("schedule space: block ", k.block, " does not tile ", f.shape[static_cast<size_t>(t)], " x ", last);
      }
      // (A transposed dim of one block, the 16 channels of a conv's output, is not split.)
      if (tf != k.block) apply(Action::split(loop_of(t, false), k.block));
      apply(Action::split(loop_of(rank - 1, false), k.block));
      apply(Action::reorder(loop_of(t, true), loop_of(rank - 1, true) - 1));
    }
    if (k.vector > 0) {
      int64_t factor = known_factor(last);
      // The last vector of a dynamic row, or of a static one longer than a quarter of it, is masked.
      bool overhang = masked_row_is_simd(last, k.vector);
      if (k.block == 0 && !overhang && (factor == 0 || factor % k.vector != 0)) {
        fail("schedule space: vector ", k.vector, " does not divide ", last);
      }
      if (k.block > 0 && k.block % k.vector != 0) fail("schedule space: vector ", k.vector, " does not divide block ", k.block);
      const Expr& inner = s.loops()[static_cast<size_t>(loop_of(rank - 1, true))].extent;
      // (A row shorter than the vector is split too: one vector, its lanes past the row masked.)
      if (!inner.is_const() || inner.value() != k.vector) apply(Action::split(loop_of(rank - 1, true), k.vector));
      apply(Action::set_kind(loop_of(rank - 1, true), LoopKind::Vector));
    }
  }
  if (k.rows > 1 && k.vector > 0) {  // vector rows: the row dim unrolled just outside the vector loop
    if (k.nr > 0 || k.block > 0) fail("schedule space: vector rows unroll only untiled, unblocked kernels");
    auto counts = vector_row_counts(f);
    if (std::find(counts.begin(), counts.end(), k.rows) == counts.end()) {
      fail("schedule space: kernel ", f.node, " takes no ", k.rows, " vector rows");
    }
    const int rows = vector_row_dim(f);
    if (k.rows < f.shape[static_cast<size_t>(rows)].value()) apply(Action::split(loop_of(rows, false), k.rows));
    int m_inner = loop_of(rows, true), n_inner = loop_of(rank - 1, true);
    if (m_inner != n_inner - 1) apply(Action::reorder(m_inner, n_inner - 1));
    apply(Action::set_kind(loop_of(rows, true), LoopKind::Unroll));
  } else if (k.rows > 1) {
    if (k.nr > 0 || k.block > 0) fail("schedule space: rows unroll only kernels without SIMD outputs or blocks");
    int64_t factor = known_factor(last);
    if (factor == 0 || factor % k.rows != 0) fail("schedule space: rows ", k.rows, " does not divide ", last);
    if (!last.is_const() || last.value() > k.rows) apply(Action::split(loop_of(rank - 1, true), k.rows));
    apply(Action::set_kind(loop_of(rank - 1, true), LoopKind::Unroll));
  }
  if (k.prefetch > 0) apply(Action::prefetch(k.prefetch));
  if (k.gpu_reduce >= 0 || k.gpu_group > 0) apply(Action::gpu(k.gpu_reduce, k.gpu_group));
  if (k.reduce_lanes > 1) apply(Action::reduce_lanes(k.reduce_lanes));
  if (k.reduce_unroll > 1) apply(Action::reduce_unroll(k.reduce_unroll));
  if (k.reduce_split > 1) apply(Action::reduce_split(k.reduce_split));
  if (k.parallel >= 0) {
    int seen = 0;
    for (size_t i = 0; i < s.loops().size(); ++i) {
      const LoopDef& l = s.loops()[i];
      if (l.kind != LoopKind::Serial) break;
      if (l.extent.is_const() && l.extent.value() < 2) continue;
      if (seen++ < k.parallel) continue;
      if (i != 0) apply(Action::reorder(static_cast<int>(i), 0));
      apply(Action::set_kind(0, LoopKind::Parallel));
      break;
    }
  }
  // A pack made inside the kernel is made by the thread that reads it: the
  // parallel loop must walk the panels (columns), or there is none.
  if (k.pack_inline && s.loops()[0].kind == LoopKind::Parallel && s.loops()[0].dim != rank - 1) {
    fail("schedule space: pack_inline needs the column panels as the parallel loop");
  }
  return actions;
}

std::vector<Knobs> neighbours(const KernelFacts& f, const Knobs& k) {
  std::vector<Knobs> out;
  auto push = [&](Knobs n) {
    if (!(n == k) && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  int rank = static_cast<int>(f.shape.size());
  for (int64_t p : rfactor_parts(f, k.reduce_lanes)) {
    Knobs n = k;
    n.rfactor = k.rfactor == p ? 1 : p;
    if (n.rfactor > 1) n.parallel = -1;
    push(n);
  }
  int64_t l = f.lanes;
  if (rank == 0) {  // a single output: only its reduction's knobs
    Knobs lanes = k;
    lanes.reduce_lanes = k.reduce_lanes > 1 ? 1 : l;
    push(lanes);
  } else if (k.nr > 0) {
    const Expr& last = f.shape.back();
    const Expr& m = f.shape[static_cast<size_t>(f.row_dim)];
    for (int64_t mr : tile_rows_in(m, {1, 2, 3, 4, 5, 6, 7, 8})) {
      Knobs n = k;
      n.mr = mr;
      push(n);
    }
    for (int64_t nr : f.tile_overhangs ? overhanging_panels(f)
                                       : divisors_in(known_factor(last), {l, 2 * l, 3 * l, 4 * l, 5 * l, 6 * l, 7 * l})) {
      Knobs n = k;
      n.nr = nr;
      push(n);
    }
    if (f.pack_operand >= 0) {
      Knobs n = k;
      n.pack = !k.pack;
      n.pack_inline = false;
      n.pair_dot = n.pack && f.pair_dot;
      push(n);
      if (k.pack && f.one_sum_axis) {
        Knobs made_inline = k;
        made_inline.pack_inline = !k.pack_inline;
        made_inline.pair_dot = false;
        push(made_inline);
      }
      if (k.pack && !k.pack_inline && f.pair_dot) {  // bf16 pairs (vdpbf16ps) against the f32 FMA path
        Knobs pairs = k;
        pairs.pair_dot = !k.pair_dot;
        push(pairs);
      }
    }
    Knobs order = k;
    order.n_outer = !k.n_outer;
    order.m_block = 0;
    push(order);
    for (int64_t b : {0, 4, 8, 16}) {  // cache blocks of row tiles
      Knobs n = k;
      n.m_block = b;
      n.n_outer = true;
      push(n);
    }
    Knobs rows = k;  // leave the tile: a row schedule
    rows.nr = 0;
    rows.mr = 1;
    rows.pack = false;
    rows.pack_inline = false;
    rows.pair_dot = false;
    rows.vector = f.vector_last ? l : 0;
    push(rows);
  } else {
    const Expr& last = f.shape.back();
    std::vector<int64_t> widths = divisors_in(known_factor(last), {l, 2 * l, 4 * l});
    if (widths.empty() && f.vector_last) widths = {l};  // a row the lanes do not divide, its last vector masked
    for (int64_t w : overhanging_widths(f)) widths.push_back(w);
    for (int64_t v : widths) {
      Knobs n = k;
      n.vector = v;
      n.rows = 1;
      push(n);
    }
    Knobs scalar = k;
    scalar.vector = 0;
    push(scalar);
    if (f.transposed_dim >= 0) {
      for (int64_t b : {0, 16, 32, 64}) {
        Knobs n = k;
        n.block = b;
        n.rows = 1;
        push(n);
      }
    }
    if (f.tileable) {
      Knobs tile = heuristic_knobs(f);
      tile.parallel = k.parallel;
      push(tile);
    }
    Knobs lanes = k;
    lanes.reduce_lanes = k.reduce_lanes > 1 ? 1 : l;
    push(lanes);
    if (f.lane_period > l) {  // lanes of one vector, or spanning the period of the digits
      Knobs span = k;
      span.reduce_lanes = k.reduce_lanes == f.lane_period ? l : f.lane_period;
      push(span);
    }
    for (int64_t d : {0, 1, 2, 4}) {
      Knobs n = k;
      n.prefetch = d;
      push(n);
    }
    if (k.vector == 0) {
      for (int64_t r : divisors_in(known_factor(last), {1, 2, 4, 8})) {
        Knobs n = k;
        n.rows = r;
        push(n);
      }
    } else if (k.block == 0) {
      std::vector<int64_t> counts = vector_row_counts(f);
      counts.push_back(1);
      for (int64_t r : counts) {
        Knobs n = k;
        n.rows = r;
        push(n);
      }
    }
  }
  for (int64_t u : {1, 2, 4, 8}) {
    Knobs n = k;
    n.reduce_unroll = u;
    push(n);
  }
  for (int64_t d : f.reduce_splits) {
    Knobs n = k;
    n.reduce_split = k.reduce_split == d ? 1 : d;
    push(n);
  }
  if (f.gpu) {  // work-group knobs: reduction mode and group size
    for (int mode : {0, 1, 2}) {
      Knobs n = k;
      n.gpu_reduce = mode;
      push(n);
    }
    for (int64_t size : {32, 64, 128, 256}) {
      Knobs n = k;
      n.gpu_group = size;
      push(n);
    }
  }
  for (int p : {-1, 0, 1, 2}) {  // a single output has no loop to run in parallel (rfactor's parts do)
    Knobs n = k;
    n.parallel = p;
    if (rank > 0) push(n);
  }
  return out;
}

}  // namespace lumen::kernel
