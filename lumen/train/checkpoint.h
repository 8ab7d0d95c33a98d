// Training checkpoints as safetensors: named f32 tensors (parameters and
// optimizer slots) plus integer counters and the optimizer's name in the
// metadata. Saving writes a temporary file and renames it; loading checks
// the whole file against what the trainer holds before returning anything.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lumen/core/array.h"

namespace lumen::train {

struct Checkpoint {
  std::vector<std::pair<std::string, Array>> tensors;  // owned copies
  std::map<std::string, int64_t> counters;
};

void save_checkpoint(const std::string& path, const std::vector<std::pair<std::string, Array>>& tensors,
                     const std::map<std::string, int64_t>& counters, const std::string& optimizer);

// Reads `path` and checks it holds exactly the tensors of `expected` (names,
// dtypes, shapes) written by the same optimizer, and every counter of
// `expected_counters`. Throws lumen::Error naming the file and the problem
// (truncated, missing or extra tensor, shape, optimizer) otherwise.
Checkpoint load_checkpoint(const std::string& path, const std::vector<std::pair<std::string, Array>>& expected,
                           const std::string& optimizer, const std::vector<std::string>& expected_counters = {"micro_steps"});

}  // namespace lumen::train
