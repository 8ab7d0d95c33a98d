// Internal to the CPU code generator: writes one kernel as C++.
//
// Scalar code is straightforward. Lane loops (unroll / vector) are written in
// lock step: statements inside a lane region are emitted once per *combo*
// (an assignment of the unrolled lane variables) while loops nested in the
// region are shared, so one reduction loop updates a whole register tile.
// The vector lane variable v (extent W) becomes chunk·N + vl, where N is the
// SIMD width: chunks are unrolled, vl is the SIMD lane. A value that depends
// on vl is a SIMD vector; one that cannot be vectorised is computed per lane
// and packed, so every construct has a correct (if slower) path.
#pragma once

#include <map>
#include <sstream>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lumen/backend/cpu/codegen_util.h"
#include "lumen/kernel/ir.h"

namespace lumen::cpu {

struct Reg {
  std::string name;
  bool vector = false;
  DType dtype = DType::F32;
};

// A reduction's vector overhanging its end reads r % E (and r / E) under the mask r < E; where
// the mask holds that is r (and 0). `index` without such wraps, each proven by enumerating the
// variables involved (byte_dot.cpp); nothing where one cannot be.
std::optional<Expr> unwrap_overhang(const Expr& index, const Expr& valid, const Expr& vl);

// The unrolled lane variables in effect, and the SIMD lane if any.
struct LaneState {
  std::vector<Expr> vars;        // unrolled (including vector chunks)
  std::vector<int64_t> extents;
  Expr vector_var;               // the IR's vector loop variable
  Expr chunk;                    // its chunk variable (one of `vars`)
  Expr vl;                       // the SIMD lane variable
  bool active() const { return !vars.empty() || vl.defined(); }
};

// One assignment of the unrolled lane variables.
struct Combo {
  std::unordered_map<Expr, Expr, ExprHash> subst;
  std::string key;
  bool vector = false;  // vl stays symbolic
  Expr vl;
  Expr vector_var;         // the IR variable mapped to chunk_base + vl
  int64_t chunk_base = 0;
};

struct AccState {
  DType dtype;
  kernel::Combine combine;
  std::vector<Expr> lane_vars;  // unrolled lane variables when it was declared
  bool vector = false;          // one SIMD lane per output lane
  bool partial = false;         // SIMD partial results, combined when read outside
  std::string combined;         // the scalar the partial results were combined into
  int depth = 0;                // block depth of its declaration
  int64_t chunks = 1;           // partial results of reduce lanes spanning several vectors: one
                                // accumulator a vector (independent chains), combined at the end
};

class KernelWriter {
 public:
  KernelWriter(const kernel::Kernel& k, int simd_lanes);
  std::string render();
  bool uses_vectors() const { return uses_vectors_; }

 private:
  // statements (codegen.cpp)
  void write_block(const kernel::Block& block, int depth, LaneState& lanes, bool top);
  void write_loop(const kernel::Stmt& s, int depth, LaneState& lanes, bool top);
  void write_leaf(const kernel::Stmt& s, const std::string& pad, const Combo& combo);
  // The condition under which serial `loop` may stop early: every accumulator it updates is
  // an any (a max of booleans) that holds true, so later iterations cannot change it. Empty
  // when the loop does anything else (stores, checked gathers, other reductions).
  std::string saturated_condition(const kernel::Stmt& loop) const;
  bool lane_region_supported(const kernel::Stmt& loop) const;
  bool is_reduce_lanes_span(const kernel::Stmt& loop) const;
  std::vector<Combo> combos(const LaneState& lanes) const;
  void mark_partial_accs(const kernel::Block& block, size_t from, const kernel::Stmt& init, int64_t lane_combos);
  std::string acc_name(int acc, const Combo& combo) const;
  // The accumulator a statement in `combo` updates: acc_name, and for partial results kept a
  // vector apart, the vector's chunk.
  std::string update_name(int acc, const Combo& combo) const;
  // Partial accumulator `name`'s chunks combined into one vector (itself where there is one).
  std::string chunks_combined(const AccState& st, const std::string& name) const;

  // values (value_writer.cpp)
  Reg value(const kernel::Value& v, const Combo& combo, const std::string& pad);
  Reg scalar_value(const kernel::Value& v, const Combo& combo, const std::string& pad);
  Reg vector_value(const kernel::Value& v, const Combo& combo, const std::string& pad);
  Reg lanewise(const kernel::Value& v, const Combo& combo, const std::string& pad);
  // A PairDot's operands as (broadcast pair, panel pairs) vectors for lumen_dot_bf16_pairs.
  std::optional<std::pair<std::string, std::string>> bf16_pairs(const kernel::Value& v, const Combo& combo,
                                                                const std::string& pad);
  // Idioms (byte_dot.cpp): a sum of byte products four a lane (vpdpbusd), a
  // load whose index advances every c lanes (a block's scale over its lanes).
  // `into`: an i32 vector accumulator the products add into (empty: a value of its own).
  std::optional<Reg> byte_dot(const kernel::Value& v, const Combo& combo, const std::string& pad, const std::string& into = "");
  std::optional<Reg> repeated_load(const kernel::Value& v, const Combo& combo, const std::string& pad);
  // An f32 load whose lanes walk memory at a constant stride of 2 or more
  // (lumen_load_f32_strided); nothing for other loads.
  std::optional<Reg> strided_load(const kernel::Value& v, const Combo& combo, const std::string& pad);
  std::optional<std::string> index_vector(const Expr& e, const Combo& combo) const;
  bool overhang_in_bounds(const kernel::Value& v, const Unclamped& u, const Expr& rest, const Combo& combo) const;
  bool varying(const kernel::Value& v, const Combo& combo);
  Reg splat(const Reg& r, const std::string& pad);
  Reg emit(const std::string& type, const std::string& expr, bool vector, DType d, const std::string& pad);
  Expr subst(const Expr& e, const Combo& combo) const;
  std::string vtype(DType d) const;
  void write_store(const kernel::Stmt& s, const std::string& pad, const Combo& combo);

  const kernel::Kernel& kernel_;
  std::vector<Expr> loop_stack_;          // variables of the for loops being written, outermost first
  std::map<int, std::vector<Expr>> acc_loops_;  // per accumulator: the for loops around its reduction
  void write_prefetches(const kernel::Value& v, const Combo& combo, const std::vector<Expr>& loops,
                        const std::string& pad);
  std::string rows_ahead(int buffer, const Expr& index, const Combo& combo, const Expr& row) const;
  ExprPrinter printer_;
  int simd_;
  // A kernel with a 64-bit (I64/F64) value is written without SIMD lanes:
  // the vector helpers are 32-bit. Its lane loops become unrolled scalars.
  bool wide_ = false;
  std::ostringstream out_;
  int counter_ = 0;
  bool uses_vectors_ = false;
  std::map<int, AccState> accs_;
  std::map<int, std::map<std::string, std::string>> acc_names_;  // acc -> sub-combo key -> name
  std::map<std::pair<const kernel::ValueNode*, std::string>, Reg> cache_;
  std::map<std::pair<const kernel::ValueNode*, std::string>, bool> varying_cache_;
  std::map<int, std::string> partial_read_;  // acc -> combined scalar, per statement
};

}  // namespace lumen::cpu
