// CandidateRig — checks whole compiled programs for the compiler's
// graph-level search (lumen/compiler/graph_search.h; program_timing.h times
// them): every candidate runs on the same random inputs (dynamic dims at
// their tuning values), its outputs
// are checked against the reference interpreter on the original graph (or,
// for graphs too large to interpret in seconds, against the original's
// compiled program, which is checked first) and its state writes against the
// original's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lumen/backend/compiled_program.h"
#include "lumen/core/array.h"
#include "lumen/core/graph.h"

namespace lumen {

class CandidateRig {
 public:
  // `dims` binds every dynamic dim (missing ones take `default_dim`).
  CandidateRig(std::shared_ptr<const Graph> graph, std::vector<Edge> outputs, const std::map<std::string, int64_t>& dims,
               int64_t default_dim);

  // Runs the program once; throws lumen::Error naming the output (or state)
  // and element where it disagrees with the reference.
  void check(const backend::CompiledProgram& program);
  // For a candidate that changes numerics on purpose (int8 dot products:
  // activations rounded to 8 bits): each output and state write within a
  // relative RMS error of `relative_rms` of the reference (||got - want|| <=
  // relative_rms · ||want||). The reference is taken from a program checked
  // with check() first; where the graph is small enough to interpret, the
  // program must also match the interpreter on its own graph (which computes
  // the same rounding) as check() requires. Throws like check(). On deep
  // graphs with the rig's random weights the RMS test is strict: random
  // layers amplify any rounding (SmolLM2's 30: 0.25 for int8 activations).
  void check_approximately(const backend::CompiledProgram& program, double relative_rms);
  // Whether the reference comes from the interpreter (the graph is small enough to run it).
  bool interprets() {
    prepare();
    return interpreted_;
  }

 private:
  void prepare();  // inputs and the interpreter's outputs, on first use

  std::shared_ptr<const Graph> graph_;
  std::vector<Edge> outputs_;
  Bindings bindings_;
  bool prepared_ = false;
  std::map<std::string, Array> inputs_;
  std::vector<Array> reference_;
  std::map<std::string, Array> reference_states_;  // after the first checked program's run
  bool checked_any_ = false;
  bool interpreted_ = false;  // the reference came from the interpreter (the graph is small enough)
};

}  // namespace lumen
