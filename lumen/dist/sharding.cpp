#include "lumen/dist/sharding.h"

#include <sstream>

namespace lumen::dist {

const char* reduce_op_name(ReduceOp op) { return op == ReduceOp::Sum ? "sum" : "max"; }

std::string Sharding::to_string() const {
  switch (kind) {
    case Kind::Replicated: return "replicated";
    case Kind::Split: return "split(" + std::to_string(axis) + ")";
    case Kind::Partial: return std::string("partial(") + reduce_op_name(reduce) + ")";
  }
  return "?";
}

std::string ParallelSpec::describe() const {
  std::ostringstream s;
  s << "stages " << stages << ", shards " << shards << "\n";
  for (const auto& [name, sharding] : shardings) s << "  " << name << ": " << sharding.to_string() << "\n";
  for (const auto& [name, stage] : stage_of) s << "  " << name << ": stage " << stage << "\n";
  return s.str();
}

}  // namespace lumen::dist
