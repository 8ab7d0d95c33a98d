// PagedLlama — a Llama-family model compiled for many sequences over one
// paged KV cache (paged_kv_cache.h): the programs the batching engine runs.
//
// Two programs, each compiled once with dynamic dims:
//  - decode: one new token for each of `batch` sequences (batch a dynamic
//    dim) at per-row positions. The projections see the rows as one
//    sequence of `batch` tokens, so every weight matrix is read once per
//    step for all of them, which is where batching pays on a CPU.
//  - prefill: a chunk of one sequence's prompt (a padded multiple of 16
//    tokens, a dynamic count) after the rows it already caches.
// Both read cached keys and values through block tables (`blocks`, a
// dynamic dim: the longest table in the step) and return the step's new
// keys and values, which are written into the pool at each row's position.
#pragma once

#include <memory>
#include <vector>

#include "lumen/compile.h"
#include "lumen/io/weight_store.h"
#include "lumen/models/llama_config.h"
#include "lumen/serve/paged_kv_cache.h"

namespace lumen::serve {

struct PagedLlamaOptions {
  int64_t block_size = 16;      // positions per KV block
  int64_t blocks = 0;           // blocks in the pool; 0: 8192 positions (16 sequences of 512), at least one whole context
  int64_t context = 0;          // positions one sequence may use; 0: min(max_position_embeddings, 2048)
  CompileOptions compile;       // backend, search budget (shared by the two programs), tuning cache
  bool refuse_unused_weights = true;  // as LlamaRunnerOptions
};

class PagedLlama {
 public:
  PagedLlama(const models::LlamaConfig& config, std::shared_ptr<io::WeightStore> weights, const PagedLlamaOptions& options = {});

  // One row of a decode step: the token at `position` (the rows cached
  // before it) of the sequence whose blocks are `blocks` (holding position).
  struct Row {
    int32_t token = 0;
    int64_t position = 0;
    const BlockTable* blocks = nullptr;
  };
  // Runs one decode step over `rows`, writes each row's keys and values into
  // the cache, and returns logits [rows, vocab] (valid until the next call).
  const Array& decode(const std::vector<Row>& rows);
  // Runs `tokens` of one sequence at positions start .. start+n-1 (the table
  // holds them), writes their keys and values, returns the last one's logits.
  std::vector<float> prefill(const std::vector<int32_t>& tokens, int64_t start, const BlockTable& blocks);

  PagedKvCache& cache() { return *cache_; }
  const models::LlamaConfig& config() const { return config_; }
  int64_t context() const { return context_; }
  double compile_seconds() const { return compile_seconds_; }
  std::string report() const;

 private:
  std::unique_ptr<Program> build(bool decode, double budget_s);
  void check_tokens(const std::vector<int32_t>& tokens) const;
  void set_tables(Program& p, const std::vector<const BlockTable*>& tables, const std::vector<int32_t>& lengths);
  // Copies rows [0, count) of each layer's new keys and values (outputs
  // [rows, seq, kv_heads, head_dim]) into the cache: row r, token s at positions[r] + s.
  void store(Program& p, const std::vector<const BlockTable*>& tables, const std::vector<int64_t>& positions, int64_t count);

  // Prefill chunks are padded to a multiple of this many tokens (LlamaRunner's kSeqBlock).
  static constexpr int64_t kSeqBlock = 16;

  models::LlamaConfig config_;
  std::shared_ptr<io::WeightStore> weights_;
  PagedLlamaOptions options_;
  int64_t context_ = 0;
  std::unique_ptr<PagedKvCache> cache_;
  std::unique_ptr<Program> decode_, prefill_;
  double compile_seconds_ = 0;
};

}  // namespace lumen::serve
