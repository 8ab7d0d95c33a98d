// Runs a compiled program and the reference interpreter's program of the same
// graph on the same inputs; returns one output of each ({got, want}).
#pragma once

#include <string>
#include <utility>

#include "lumen/compile.h"

namespace lumen {

// `inputs`: any range of (name, Array) pairs.
template <typename Inputs>
std::pair<Array, Array> run_against_interpreter(Program& program, const Graph& g, const Inputs& inputs,
                                                const std::string& output) {
  CompileOptions o;
  o.backend = Backend::Interp;
  Program ref = compile(g, {}, o);
  for (const auto& [name, a] : inputs) {
    program.set(name, a);
    ref.set(name, a);
  }
  program.run();
  ref.run();
  return {program.get(output), ref.get(output)};
}

}  // namespace lumen
