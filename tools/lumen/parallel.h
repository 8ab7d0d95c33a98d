// The command line's distributed side (lumen/dist): a decoder run by every
// rank mpirun started, under a named plan or the one the plan search picks.
#pragma once

#include <memory>
#include <string>

#include "lumen/dist/dist_llama_runner.h"
#include "lumen/dist/plan_search.h"
#include "tools/lumen/model_files.h"

namespace lumen::tools {

// "tp", "pp" or "auto" (calibrates this machine, searches, runs the best
// plan lumen can run; the table goes to `plan_table`). Collective.
std::unique_ptr<dist::DistLlamaRunner> open_parallel_decoder(const CommonOptions& o, const DecoderFiles& files,
                                                             const std::string& mode, int64_t prompt_tokens,
                                                             int64_t max_new, std::string* plan_table);

// Machine figures for the cost model: compute measured here (unless
// `calibrate` is false), communication measured over the ranks mpirun started
// (when more than one), every rank taking rank 0's figures.
dist::MachineModel calibrated_machine(const CompileOptions& compile, bool calibrate);

bool is_rank0();

}  // namespace lumen::tools
