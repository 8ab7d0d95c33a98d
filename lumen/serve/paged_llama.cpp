#include "lumen/serve/paged_llama.h"

#include <algorithm>
#include <chrono>

#include "lumen/core/error.h"
#include "lumen/core/simplify.h"
#include "lumen/core/stopwatch.h"
#include "lumen/models/llama.h"
#include "lumen/models/llama_runner.h"
#include "lumen/nn/parameter_source.h"
#include "lumen/serve/paged_attention.h"

namespace lumen::serve {

namespace {

std::string pool_name(int64_t layer, bool keys) {
  return "kv." + std::to_string(layer) + (keys ? ".keys" : ".values");
}

}  // namespace

PagedLlama::PagedLlama(const models::LlamaConfig& config, std::shared_ptr<io::WeightStore> weights, const PagedLlamaOptions& options)
    : config_(config), weights_(std::move(weights)), options_(options) {
  config_.validate();
  if (!weights_) fail("paged llama: no weights");
  if (config_.attn_softcap > 0 || config_.attention_scale > 0) {  // paged_attention computes plain scaled attention
    fail("paged llama: ", config_.model_type, "'s attention (soft-capped scores, query_pre_attn_scalar) is not in the paged "
         "server yet; serve it with --engine sequential (one sequence at a time) or run it with lumen.models.Llama");
  }
  models::check_tied_head(config_, *weights_);
  context_ = options.context > 0 ? options.context : std::min<int64_t>(config_.max_position, 2048);
  int64_t block = options.block_size;
  if (block < 1 || block > 1024) fail("paged llama: the KV block size is ", block, "; it must be 1..1024");
  int64_t per_sequence = (context_ + block - 1) / block;
  int64_t blocks = options.blocks > 0 ? options.blocks : std::max(per_sequence + 1, (8192 + block - 1) / block);
  cache_ = std::make_unique<PagedKvCache>(config_.layers, config_.kv_heads, config_.head_dim, block, blocks);
  double budget = options.compile.search_budget_s;
  decode_ = build(true, budget * 0.6);  // decode runs once per generated token: most of the search time
  prefill_ = build(false, budget * 0.4);
}

std::unique_ptr<Program> PagedLlama::build(bool decode, double budget_s) {
  auto start = std::chrono::steady_clock::now();
  Graph g;
  std::vector<Tensor> outputs;
  {
    nn::ScopedParameterSource source(*weights_);
    models::Llama model(g, config_);
    Expr batch = decode ? g.dim("batch") : Expr(1);
    Expr seq = decode ? Expr(1) : Expr(kSeqBlock) * g.dim("seq_blocks");
    Tensor tokens = g.input("tokens", {batch, seq}, DType::I32);
    Tensor lengths = g.input("lengths", {batch}, DType::I32);
    Tensor table = g.input("block_table", {batch, g.dim("blocks")}, DType::I32);
    Shape step{batch, seq};
    Tensor positions = lengths.reshape({batch, Expr(1)}) + g.iota(loop_index(step, 1), step, DType::I32);
    // Decode runs the model on one sequence of `batch` tokens ([1, batch]):
    // every projection is then one matmul with batch rows, reading each weight
    // once for all of them (as [batch, 1] it would be batch matmuls of one
    // row). Attention takes the rows back apart: [1, heads, batch, head_dim]
    // <-> [batch, heads, 1, head_dim].
    auto rows = [&](const Tensor& t) { return decode ? t.permute({2, 1, 0, 3}) : t; };
    const PagedKvCache& c = *cache_;
    Shape pool{Expr(c.blocks_total()), Expr(c.block_size()), Expr(config_.kv_heads), Expr(config_.head_dim)};
    std::vector<Tensor> keys, values;
    models::Llama::Attend attend = [&](int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v) {
      Tensor kr = rows(k), vr = rows(v);
      keys.push_back(kr.permute({0, 2, 1, 3}));  // [batch, seq, kv_heads, head_dim]: one row per token, as the pool stores it
      values.push_back(vr.permute({0, 2, 1, 3}));
      int64_t window = config_.windowed(layer) ? config_.sliding_window : 0;
      return rows(paged_attention(rows(q), kr, vr, g.input(pool_name(layer, true), pool), g.input(pool_name(layer, false), pool),
                                  table, lengths, window));
    };
    if (decode) {
      tokens = tokens.reshape({Expr(1), batch});
      positions = positions.reshape({Expr(1), batch});
    }
    std::optional<Expr> at;
    if (!decode) at = simplify(g.dim("real") - 1);
    Tensor logits = model.forward(tokens, model.rope(positions), attend, at);
    outputs.push_back(decode ? logits.reshape({batch, Expr(1), Expr(config_.vocab)}) : logits);
    outputs.insert(outputs.end(), keys.begin(), keys.end());
    outputs.insert(outputs.end(), values.begin(), values.end());
  }
  if (decode) models::check_unused_llama_weights(config_, *weights_, options_.refuse_unused_weights);
  CompileOptions o = options_.compile;
  o.search_budget_s = budget_s;
  auto tune = [&](const char* dim, int64_t value) {
    if (!o.tune_dims.count(dim)) o.tune_dims[dim] = value;
  };
  tune("batch", 8);
  tune("blocks", (128 + cache_->block_size() - 1) / cache_->block_size());
  tune("seq_blocks", 128 / kSeqBlock);
  tune("real", 128);
  auto p = std::make_unique<Program>(compile(g, outputs, o));
  for (NodeId id : p->graph().input_ids()) {
    const Node& n = p->graph().node(id);
    auto it = weights_->inputs().find(n.name);
    if (it != weights_->inputs().end()) p->set(n.name, it->second);
  }
  for (int64_t l = 0; l < config_.layers; ++l) {  // the pools: the same memory the cache writes (Arrays share it)
    p->set(pool_name(l, true), cache_->keys(l));
    p->set(pool_name(l, false), cache_->values(l));
  }
  compile_seconds_ += seconds_since(start);
  return p;
}

void PagedLlama::check_tokens(const std::vector<int32_t>& tokens) const {
  for (int32_t t : tokens) {
    if (t < 0 || t >= config_.vocab) fail("paged llama: token ", t, " is outside the vocabulary [0, ", config_.vocab, ")");
  }
}

void PagedLlama::set_tables(Program& p, const std::vector<const BlockTable*>& tables, const std::vector<int32_t>& lengths) {
  int64_t rows = static_cast<int64_t>(tables.size()), width = 1;
  for (const BlockTable* t : tables) width = std::max<int64_t>(width, static_cast<int64_t>(t->size()));
  std::vector<int32_t> flat(static_cast<size_t>(rows * width), 0);  // padding names block 0; the mask hides it
  for (int64_t r = 0; r < rows; ++r) std::copy(tables[r]->begin(), tables[r]->end(), flat.begin() + r * width);
  p.set("block_table", Array::from_ints(flat, {rows, width}));
  p.set("lengths", Array::from_ints(lengths, {rows}));
}

void PagedLlama::store(Program& p, const std::vector<const BlockTable*>& tables, const std::vector<int64_t>& positions, int64_t count) {
  int64_t layers = config_.layers, row = cache_->row_floats();
  for (int64_t l = 0; l < layers; ++l) {
    const Array& k = p.get("out" + std::to_string(1 + l));
    const Array& v = p.get("out" + std::to_string(1 + layers + l));
    int64_t seq = k.shape()[1];
    const float* kd = static_cast<const float*>(k.data());
    const float* vd = static_cast<const float*>(v.data());
    for (size_t r = 0; r < tables.size(); ++r) {
      for (int64_t s = 0; s < count; ++s) {
        int64_t at = (static_cast<int64_t>(r) * seq + s) * row;
        cache_->write(l, *tables[r], positions[r] + s, kd + at, vd + at);
      }
    }
  }
}

const Array& PagedLlama::decode(const std::vector<Row>& rows) {
  if (rows.empty()) fail("paged llama: a decode step needs at least one row");
  std::vector<int32_t> tokens, lengths;
  std::vector<const BlockTable*> tables;
  std::vector<int64_t> positions;
  for (const Row& r : rows) {
    if (!r.blocks || r.position < 0 || r.position >= cache_->block_size() * static_cast<int64_t>(r.blocks->size())) {
      fail("paged llama: a decode row at position ", r.position, " has no block for it");
    }
    tokens.push_back(r.token);
    lengths.push_back(static_cast<int32_t>(r.position));
    tables.push_back(r.blocks);
    positions.push_back(r.position);
  }
  check_tokens(tokens);
  Program& p = *decode_;
  p.set("tokens", Array::from_ints(tokens, {static_cast<int64_t>(rows.size()), 1}));
  set_tables(p, tables, lengths);
  p.run();
  store(p, tables, positions, 1);
  return p.get("out0");
}

std::vector<float> PagedLlama::prefill(const std::vector<int32_t>& tokens, int64_t start, const BlockTable& blocks) {
  if (tokens.empty()) fail("paged llama: no tokens to prefill");
  int64_t n = static_cast<int64_t>(tokens.size());
  if (start < 0 || start + n > cache_->block_size() * static_cast<int64_t>(blocks.size())) {
    fail("paged llama: positions ", start, "..", start + n - 1, " are not all in the sequence's ", blocks.size(), " blocks");
  }
  check_tokens(tokens);
  Program& p = *prefill_;
  int64_t chunks = (n + kSeqBlock - 1) / kSeqBlock;
  std::vector<int32_t> padded = tokens;
  padded.resize(static_cast<size_t>(chunks * kSeqBlock), 0);
  p.set("tokens", Array::from_ints(padded, {1, chunks * kSeqBlock}));
  p.bind("seq_blocks", chunks);
  p.bind("real", n);
  // Only the blocks holding cached rows are read (at least one: the gather needs a row).
  BlockTable cached(blocks.begin(), blocks.begin() + std::max<int64_t>(1, cache_->blocks_for(start)));
  set_tables(p, {&cached}, {static_cast<int32_t>(start)});
  p.run();
  store(p, {&blocks}, {start}, n);
  return p.get("out0").to_floats();
}

std::string PagedLlama::report() const {
  return "decode program:\n" + decode_->report() + "\nprefill program:\n" + prefill_->report();
}

}  // namespace lumen::serve
