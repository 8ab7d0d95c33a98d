// Sharding — how one tensor is laid out over the ranks of a group — and the
// ParallelSpec a plan writes: shardings and pipeline stages of a graph's
// inputs (parameters, states, data). Propagation (propagate.h) derives the
// sharding of every other node.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace lumen::dist {

enum class ReduceOp : uint8_t { Sum, Max };
const char* reduce_op_name(ReduceOp op);  // "sum", "max"

struct Sharding {
  enum class Kind : uint8_t {
    Replicated,  // every rank of the group holds the whole tensor
    Split,       // rank r holds chunk r of `axis` (equal chunks, in rank order)
    Partial,     // every rank holds a full-shaped term; the tensor is their sum (or max)
  };
  Kind kind = Kind::Replicated;
  int axis = -1;                    // Split
  ReduceOp reduce = ReduceOp::Sum;  // Partial

  static Sharding replicated() { return {}; }
  static Sharding split(int axis) { return {Kind::Split, axis, ReduceOp::Sum}; }
  static Sharding partial(ReduceOp op) { return {Kind::Partial, -1, op}; }
  bool is_replicated() const { return kind == Kind::Replicated; }
  bool is_split() const { return kind == Kind::Split; }
  bool is_partial() const { return kind == Kind::Partial; }
  bool operator==(const Sharding& o) const { return kind == o.kind && axis == o.axis && reduce == o.reduce; }
  bool operator!=(const Sharding& o) const { return !(*this == o); }
  std::string to_string() const;  // "replicated", "split(1)", "partial(sum)"
};

// What a parallel plan says about a graph: the rank layout and the
// annotations of its inputs. Ranks are numbered stage-major: rank r is in
// stage r / shards and holds shard r % shards of that stage's tensors.
struct ParallelSpec {
  int stages = 1;  // pipeline stages
  int shards = 1;  // ranks splitting each stage's tensors (tensor or data parallel)
  std::map<std::string, Sharding> shardings;  // by input name; absent: replicated
  std::map<std::string, int> stage_of;        // by input name; absent: any stage (loaded where used)
  int ranks() const { return stages * shards; }
  std::string describe() const;  // one line per annotation, for plans and hashes
};

}  // namespace lumen::dist
