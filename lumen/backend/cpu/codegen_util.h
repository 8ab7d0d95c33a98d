// Internal to the CPU code generator: printing index Exprs and scalar values
// as C++, shared by the scalar writer (codegen.cpp) and the lane writer
// (lanes.cpp).
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "lumen/kernel/ir.h"

namespace lumen::cpu {

const char* value_type(DType d);                       // C type a value is held in
std::string c_identifier(const std::string& name);     // a safe C identifier
std::string number_literal(double v, DType d);
std::string accumulator_identity(DType d, kernel::Combine c);
std::string combine_expr(const std::string& acc, const std::string& v, DType d, kernel::Combine c);
std::string store_expr(const std::string& v, DType d);  // value -> storage conversion
bool mentions(const Expr& e, const Expr& var);          // var occurs in e
// The coefficient of `var` if e = c·var + (terms without var); nothing otherwise.
std::optional<int64_t> lane_stride(const Expr& e, const Expr& var);
// An index whose lanes are clamped to a last point, min(X, C) with X walking
// `var` (the lanes of a vector overhanging a row's end): the index with X in
// place of the clamp, and where the lanes are in bounds (X <= C). Lanes out of
// bounds are then masked off: they only recompute the clamped last point.
// max(X, C) likewise (a padded view's coordinate clamped into its mask): lanes
// before C are out of bounds, and the view's validity masks them anyway.
struct Unclamped {
  Expr index;
  Expr in_bounds;
  std::vector<Expr> clamps;  // the min(x, bound) and max(x, bound) nodes taken out
};
std::optional<Unclamped> unclamp(const Expr& index, const Expr& var);
// `e` with each of `clamps` replaced by its x: for a load's validity, whose
// lanes past the clamps are masked by the unclamped index's in_bounds anyway
// (a padded window's "0 < min(x, W - 1)" becomes the affine "0 < x").
Expr without_clamps(const Expr& e, const std::vector<Expr>& clamps, const Expr& var);

// Index Exprs as C int64 expressions; dynamic dims read from `d_<name>`.
class ExprPrinter {
 public:
  explicit ExprPrinter(const std::vector<std::string>& dims);
  std::string print(const Expr& e) const;

 private:
  std::string var_name(const Expr& v) const;
  std::map<std::string, std::string> dim_names_;
};

}  // namespace lumen::cpu
