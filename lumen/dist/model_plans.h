// Parallel plans for real models: the annotations (ParallelSpec) that split a
// model's parameters and states; propagation (propagate.h) derives the rest
// and inserts the communication.
//
// Tensor parallel (Megatron-style): the projections into attention heads and
// the MLP's first layer are split by output rows (column parallel), the
// projections out of them by input columns (row parallel), so each block half
// ends in one all-reduce. Heads split across shards; grouped-query key/value
// heads split too when the shards divide them, and are replicated (each shard
// computes all of them and reads the ones its query heads use) when there are
// fewer kv heads than shards. An untied LM head is split over the vocabulary
// (its logits all-gathered); a tied one stays replicated (the embedding gather
// needs all of it).
//
// Pipeline: layers split into contiguous stages as evenly as possible; the
// embedding with the first stage, the final norm and the LM head with the last.
#pragma once

#include <string>
#include <vector>

#include "lumen/dist/sharding.h"
#include "lumen/models/bert.h"
#include "lumen/models/llama.h"

namespace lumen::dist {

ParallelSpec llama_tensor_parallel(const models::LlamaConfig& config, int shards);
ParallelSpec llama_pipeline(const models::LlamaConfig& config, int stages);
// The first layer of each stage (stages + 1 entries, the last = layers).
std::vector<int64_t> pipeline_layer_bounds(int64_t layers, int stages);
ParallelSpec bert_tensor_parallel(const models::BertConfig& config, int shards);
// Data parallel: each named input split along axis 0 (its batch); parameters
// replicated, so their gradients (sums over the batch) are all-reduced.
ParallelSpec data_parallel(const std::vector<std::string>& batch_inputs, int shards);

}  // namespace lumen::dist
