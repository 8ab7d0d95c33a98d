// Sibling integer-sum loops fused into one (lumen/kernel/fuse_sibling_loops.h).
// (Compiled kernels with fused loops are checked against the interpreter by
// tests/compiler/int8_dot_test.cpp: Q4_K's two nibble chains.)
#include <gtest/gtest.h>

#include "lumen/kernel/fuse_sibling_loops.h"

namespace lumen {
namespace {

using kernel::Stmt;
using kernel::StmtKind;

// acc[acc] += buffer[var] (i32), in a serial loop of `extent` over `var`.
Stmt sum_loop(const std::string& var, int64_t extent, int acc, const kernel::Value& extra = nullptr) {
  Expr v = Expr::index(var, Expr(extent));
  kernel::Value term = kernel::load(0, DType::I32, v, Expr(1));
  if (extra) term = kernel::binary(Op::Add, term, extra);
  return Stmt::make_loop(v, Expr(extent), kernel::LoopKind::Serial, {Stmt::acc_update(acc, kernel::Combine::Sum, term)});
}

int loops(const kernel::Block& b) {
  int n = 0;
  for (const Stmt& s : b) n += s.kind == StmtKind::Loop ? 1 + loops(s.body) : 0;
  return n;
}

TEST(FuseSiblingLoops, IndependentIntegerSumsOfOneExtentShareALoop) {
  kernel::Kernel k;
  k.body = {Stmt::acc_init(0, DType::I32, kernel::Combine::Sum), sum_loop("r1", 8, 0),
            Stmt::acc_init(1, DType::I32, kernel::Combine::Sum), sum_loop("r2", 8, 1),
            Stmt::store(1, Expr(0), kernel::binary(Op::Add, kernel::acc_value(0, DType::I32), kernel::acc_value(1, DType::I32)))};
  EXPECT_EQ(kernel::fuse_sibling_loops(k), 1);
  ASSERT_EQ(k.body.size(), 4u);  // both inits, one loop, the store
  EXPECT_EQ(k.body[0].kind, StmtKind::AccInit);
  EXPECT_EQ(k.body[1].kind, StmtKind::AccInit);
  ASSERT_EQ(k.body[2].kind, StmtKind::Loop);
  ASSERT_EQ(k.body[2].body.size(), 2u);
  EXPECT_EQ(k.body[2].body[1].acc, 1);
  // the second loop's variable became the first's
  EXPECT_TRUE(k.body[2].body[1].value->index == k.body[2].var) << k.body[2].body[1].value->index;
  EXPECT_EQ(k.body[3].kind, StmtKind::Store);
}

TEST(FuseSiblingLoops, LeavesDependentFloatOrMismatchedLoopsApart) {
  // The second sum reads the first's accumulator: it needs the first complete.
  kernel::Kernel dependent;
  dependent.body = {Stmt::acc_init(0, DType::I32, kernel::Combine::Sum), sum_loop("r1", 8, 0),
                    Stmt::acc_init(1, DType::I32, kernel::Combine::Sum), sum_loop("r2", 8, 1, kernel::acc_value(0, DType::I32))};
  EXPECT_EQ(kernel::fuse_sibling_loops(dependent), 0);
  EXPECT_EQ(loops(dependent.body), 2);
  // Different extents.
  kernel::Kernel extents;
  extents.body = {Stmt::acc_init(0, DType::I32, kernel::Combine::Sum), sum_loop("r1", 8, 0),
                  Stmt::acc_init(1, DType::I32, kernel::Combine::Sum), sum_loop("r2", 4, 1)};
  EXPECT_EQ(kernel::fuse_sibling_loops(extents), 0);
  // f32 sums: their order of terms is part of their value; left alone.
  kernel::Kernel floats;
  floats.body = {Stmt::acc_init(0, DType::F32, kernel::Combine::Sum), sum_loop("r1", 8, 0),
                 Stmt::acc_init(1, DType::F32, kernel::Combine::Sum), sum_loop("r2", 8, 1)};
  EXPECT_EQ(kernel::fuse_sibling_loops(floats), 0);
  // A store between the loops.
  kernel::Kernel stored;
  stored.body = {Stmt::acc_init(0, DType::I32, kernel::Combine::Sum), sum_loop("r1", 8, 0),
                 Stmt::store(1, Expr(0), kernel::acc_value(0, DType::I32)), Stmt::acc_init(1, DType::I32, kernel::Combine::Sum),
                 sum_loop("r2", 8, 1)};
  EXPECT_EQ(kernel::fuse_sibling_loops(stored), 0);
}

}  // namespace
}  // namespace lumen
