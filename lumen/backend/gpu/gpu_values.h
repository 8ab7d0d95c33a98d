// Internal to the GPU printer: index Exprs, values, accumulators and leaf
// statements as GPU C, under the lane combination being written (a lane
// loop in registers writes each leaf once per combination of its lane
// variables; accumulators declared inside get one register per lane).
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "lumen/backend/gpu/dialect.h"
#include "lumen/backend/gpu/staging.h"
#include "lumen/kernel/ir.h"

namespace lumen::gpu {

std::string identifier(const std::string& name);             // a safe C identifier
std::string storage_type(DType d, const Dialect& dialect);    // element type of a buffer
const char* value_type(DType d);                               // type a value is held in

struct AccInfo {
  DType dtype = DType::F32;
  kernel::Combine combine = kernel::Combine::Sum;
  size_t lane_depth = 0;  // lane loops around its declaration
};

class ValueWriter {
 public:
  ValueWriter(const kernel::Kernel& k, const Dialect& d, std::ostringstream& out);

  std::string expr(const Expr& e) const;    // an index Expr as a 64-bit integer expression
  Expr substituted(const Expr& e) const;    // with the current lane combination applied

  // Lane loops in effect, and the combination being written.
  void push_lane(const Expr& var, int64_t extent);
  void pop_lane();
  std::vector<Expr> lane_vars() const;
  int64_t combo_count() const;
  void set_combo(int64_t combo);  // also forgets the temporaries of the previous statement

  void declare_acc(const kernel::Stmt& s, const std::string& pad);
  void update_acc(const kernel::Stmt& s, const std::string& pad);
  void store(const kernel::Stmt& s, const std::string& pad);
  void bind(const kernel::Stmt& s, const std::string& pad);
  const AccInfo& acc(int id) const;
  std::string acc_name(int id) const;

  // Staged reads (staging.h): loads of `s` print as reads of their tiles.
  void set_staging(const Staging* s) { staging_ = s; }
  // A staged load as the copy into its tile evaluates it: index and validity
  // over the variables as declared there (no lane combination applied).
  std::string fill_value(const kernel::Value& load) const;

 private:
  std::string value(const kernel::Value& v, const std::string& pad);
  std::string compute(const kernel::Value& v, const std::string& pad);
  std::string load(const kernel::Value& v);
  std::string load_text(const kernel::Value& v, const Expr& index, const Expr& valid) const;

  const kernel::Kernel& kernel_;
  const Dialect& d_;
  std::ostringstream& out_;
  std::map<std::string, std::string> dims_;
  std::vector<Expr> lane_vars_;
  std::vector<int64_t> lane_extents_, at_;
  std::unordered_map<Expr, Expr, ExprHash> subst_;
  std::map<int, AccInfo> accs_;
  std::map<const kernel::ValueNode*, std::string> cache_;
  int counter_ = 0;
  const Staging* staging_ = nullptr;
};

}  // namespace lumen::gpu
