// The loop IR: what a kernel computes, as loops over symbolic ranges
// containing loads and stores with index Exprs, accumulators and ALU values.
//
// Values form an immutable DAG (shared nodes are computed once); statements
// form a tree. A Loop is serial, parallel (its iterations are split across
// threads) or a lane loop: its iterations run in lock step, either unrolled
// into separate registers or packed into SIMD vectors. Control flow inside a
// lane loop (nested loops, accumulators) is shared by all lanes, which is how
// one reduction loop updates a whole register tile (unroll-and-jam) and how
// an outer loop is vectorised.
#pragma once

#include <functional>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lumen/core/dtype.h"
#include "lumen/core/expr.h"
#include "lumen/core/op.h"

namespace lumen::kernel {

// ---- values ----------------------------------------------------------------

enum class ValueKind : uint8_t {
  Number,   // a constant
  Index,    // an integer Expr of loop variables (iota constants, gather indices)
  Load,     // buffer[index] where `valid`, else 0
  Unary,    // Log2, Exp2, Sin, Sqrt, Recip
  Binary,   // Add, Mul, Mod, LessThan
  Cast,
  Select,   // args[0] ? args[1] : args[2] (masking inside the backend)
  Acc,      // the current value of an accumulator
  Max,      // NaN-propagating maximum of two values (reductions)
  PairDot,  // args a0, b0, a1, b1 (f32, each exactly a bf16 value): a0·b0 + a1·b1, the products exact
            // (schedule action pair_dot: two steps of a bf16 contraction, one vdpbf16ps where the CPU has it)
};

struct ValueNode;
using Value = std::shared_ptr<const ValueNode>;

struct ValueNode {
  ValueKind kind;
  DType dtype;
  double number = 0;        // Number
  Expr index;               // Index, Load
  Expr valid;               // Load (1 when always valid)
  int buffer = -1;          // Load
  Op op = Op::Add;          // Unary, Binary
  int acc = -1;             // Acc
  std::vector<Value> args;  // operands
};

Value number(double v, DType dtype);
Value index_value(const Expr& e, DType dtype);
Value load(int buffer, DType dtype, const Expr& index, const Expr& valid);
Value unary(Op op, const Value& a);
Value binary(Op op, const Value& a, const Value& b);  // LessThan yields Bool
Value cast(const Value& a, DType dtype);
Value select(const Value& cond, const Value& a, const Value& b);
Value acc_value(int acc, DType dtype);
Value maximum(const Value& a, const Value& b);
Value pair_dot(const Value& a0, const Value& b0, const Value& a1, const Value& b1);

// Every variable the value depends on (through index Exprs), and whether it
// reads an accumulator.
std::vector<Expr> value_vars(const Value& v);

// Loop variables replaced (a loop split or renamed): every index Expr of the
// value, or of every statement of the block, with `vars` substituted and simplified.
using VarMap = std::unordered_map<Expr, Expr, ExprHash>;
Value substituted(const Value& v, const VarMap& vars);

// ---- statements --------------------------------------------------------------

enum class LoopKind : uint8_t { Serial, Parallel, Unroll, Vector };

struct Stmt;
using Block = std::vector<Stmt>;

enum class StmtKind : uint8_t {
  Loop,       // for var in [0, extent)
  AccInit,    // accumulator = init
  AccUpdate,  // accumulator = accumulator (+ or max) value
  Store,      // buffer[index] = value
  Bind,       // var = (int) value: a data-dependent index (gather), checked against [0, bound)
};

enum class Combine : uint8_t { Sum, Max };

struct Stmt {
  StmtKind kind;
  // Loop
  Expr var;
  Expr extent;
  LoopKind loop = LoopKind::Serial;
  int unroll_hint = 1;  // Serial loops: ask the C compiler to unroll this many times
  Block body;
  // AccInit / AccUpdate
  int acc = -1;
  Combine combine = Combine::Sum;
  DType dtype = DType::F32;  // AccInit: the accumulator's dtype
  // Store / Bind / AccUpdate
  int buffer = -1;
  Expr index;
  Value value;
  Expr bound;  // Bind: exclusive upper bound the value is checked against
  Expr guard;  // Bind: only where this holds (padding positions skip the check)

  static Stmt make_loop(Expr var, Expr extent, LoopKind kind, Block body);
  static Stmt acc_init(int acc, DType dtype, Combine combine);
  static Stmt acc_update(int acc, Combine combine, Value value);
  static Stmt store(int buffer, Expr index, Value value);
  static Stmt bind(Expr var, Value value, Expr bound, Expr guard);
};

// ---- kernels ---------------------------------------------------------------------

struct BufferArg {
  std::string name;  // for generated code and diagnostics
  DType dtype;
  bool output;
  int64_t numel = -1;  // elements every buffer bound here holds at least (a static shape's); -1: dynamic
};

struct Kernel {
  std::string name;
  std::vector<BufferArg> buffers;
  std::vector<std::string> dims;  // dynamic dims passed at run time, by name
  int accumulators = 0;
  Block body;
  std::vector<std::string> fused;  // graph nodes fused in here, for the generated comment
  int64_t prefetch_rows = 0;       // reductions prefetch this many parallel iterations ahead
  // GPU backends (schedule action gpu): reduction mode (0 per work item, 1
  // across a work-group, 2 per work item with shared operands staged) and
  // work-group size; -1 / 0: the backend's heuristic.
  int gpu_reduce = -1;
  int64_t gpu_group = 0;
};

const char* loop_kind_name(LoopKind kind);
// Unroll or Vector: a loop whose iterations are lanes of a register tile.
bool is_lane(LoopKind kind);
// Calls `f` on every statement nested in `block`, each before its body.
void walk(const Block& block, const std::function<void(const Stmt&)>& f);

Block substituted(const Block& block, const VarMap& vars);

}  // namespace lumen::kernel
