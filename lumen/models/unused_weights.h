// Every tensor of a checkpoint is either used by the model built from it or
// named in an error: a tensor the model does not read means the config and
// the weights disagree (a bias the model lacks, a layer too many), and
// computing without it would be silently wrong.
#pragma once

#include <string>
#include <vector>

#include "lumen/io/weight_store.h"

namespace lumen::models {

// Weights of `store` that no parameter declared so far has read, sorted.
std::vector<std::string> unused_weights(const io::WeightStore& store);

// Throws lumen::Error naming the unused weights of `store`, except those
// whose name ends with one of `known_unneeded` (tensors a checkpoint carries
// that do not change the result, e.g. "rotary_emb.inv_freq" buffers).
void refuse_unused_weights(const io::WeightStore& store, const std::vector<std::string>& known_unneeded,
                           const std::string& model);

}  // namespace lumen::models
