// How many elements of each buffer a launch of a kernel may touch, at given
// dims: an upper bound from interval arithmetic over the loop ranges (loads
// and stores with their index Exprs; gathered indices within their checked
// bound). A runtime that must name buffer sizes to its driver (OpenCL
// buffers over host memory) sizes them with this.
#pragma once

#include <cstdint>
#include <vector>

#include "lumen/kernel/ir.h"

namespace lumen::gpu {

class BufferExtents {
 public:
  explicit BufferExtents(const kernel::Kernel& k);
  // Per buffer: the largest index touched + 1 (0: never touched at these dims).
  std::vector<int64_t> elements(const int64_t* dims) const;

 private:
  struct Scope {  // a loop variable or a gathered index, with its exclusive bound
    Expr var, extent;
  };
  struct Access {
    int buffer;
    Expr index;
    std::vector<Scope> scopes;  // outermost first
  };
  void collect(const kernel::Block& block, std::vector<Scope>& scopes);
  void collect_value(const kernel::Value& v, const std::vector<Scope>& scopes);

  std::vector<std::string> dims_;
  size_t buffers_ = 0;
  std::vector<Access> accesses_;
};

}  // namespace lumen::gpu
