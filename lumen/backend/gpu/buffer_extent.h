// How many elements of each buffer a launch of a kernel may touch, at given
// dims: an upper bound from interval arithmetic over the loop ranges (loads
// and stores with their index Exprs; gathered indices within their checked
// bound). A masked load (padding) counts only where its mask can hold: each
// loop variable is clamped to the range the mask allows. A runtime that must
// name buffer sizes to its driver (OpenCL buffers over host memory) sizes
// them with this; results are remembered per dims.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "lumen/kernel/ir.h"

namespace lumen::gpu {

class BufferExtents {
 public:
  explicit BufferExtents(const kernel::Kernel& k);
  // Per buffer: the largest index touched + 1 (0: never touched at these dims).
  std::vector<int64_t> elements(const int64_t* dims) const;
  BufferExtents(const BufferExtents& o) : dims_(o.dims_), buffers_(o.buffers_), accesses_(o.accesses_) {}

 private:
  struct Scope {  // a loop variable or a gathered index, with its exclusive bound
    Expr var, extent;
  };
  struct Access {
    int buffer;
    Expr index;
    Expr valid;  // where the access happens (undefined: always)
    std::vector<Scope> scopes;  // outermost first
  };
  void collect(const kernel::Block& block, std::vector<Scope>& scopes);
  void collect_value(const kernel::Value& v, const std::vector<Scope>& scopes);
  std::vector<int64_t> compute(const int64_t* dims) const;

  std::vector<std::string> dims_;
  size_t buffers_ = 0;
  std::vector<Access> accesses_;
  mutable std::mutex mutex_;
  mutable std::map<std::vector<int64_t>, std::vector<int64_t>> memo_;
};

}  // namespace lumen::gpu
