#include "lumen/models/sentence_encoder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "lumen/core/error.h"
#include "lumen/models/unused_weights.h"

namespace lumen::models {

namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) fail("sentence encoder: cannot open '", p.string(), "'");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("sentence encoder: '", p.string(), "' is not valid JSON (", e.what(), ")");
  }
}

// sentence-transformers' Pooling config: {"pooling_mode": "cls"} (current
// versions) or booleans pooling_mode_<x>_token(s) (older ones; none set means
// mean). One mode lumen computes, or an error naming what the file asks for.
Pooling read_pooling(const fs::path& path) {
  nlohmann::json p = read_json(path);
  static const std::pair<const char*, const char*> legacy[] = {
      {"pooling_mode_cls_token", "cls"},
      {"pooling_mode_max_tokens", "max"},
      {"pooling_mode_mean_tokens", "mean"},
      {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"},
      {"pooling_mode_weightedmean_tokens", "weightedmean"},
      {"pooling_mode_lasttoken", "lasttoken"},
  };
  std::vector<std::string> modes;
  if (p.contains("pooling_mode")) {
    const nlohmann::json& m = p["pooling_mode"];
    if (m.is_string()) modes.push_back(m.get<std::string>());
    for (const nlohmann::json& e : m.is_array() ? m : nlohmann::json::array()) modes.push_back(e.is_string() ? e.get<std::string>() : e.dump());
    if (modes.empty()) fail("sentence encoder: '", path.string(), "': pooling_mode must be a mode name, got ", m.dump());
  } else {
    for (const auto& [key, mode] : legacy) {
      if (!p.contains(key)) continue;
      if (!p[key].is_boolean()) fail("sentence encoder: '", path.string(), "': ", key, " must be true or false, got ", p[key].dump());
      if (p[key].get<bool>()) modes.push_back(mode);
    }
    if (modes.empty()) modes.push_back("mean");
  }
  if (modes.size() != 1) {
    std::string all;
    for (const std::string& m : modes) all += (all.empty() ? "" : ", ") + m;
    fail("sentence encoder: '", path.string(), "' asks for several poolings at once (", all, "); lumen computes one");
  }
  for (Pooling known : {Pooling::Mean, Pooling::Cls, Pooling::Max, Pooling::LastToken}) {
    if (modes[0] == pooling_name(known)) return known;
  }
  fail("sentence encoder: '", path.string(), "' asks for pooling mode '", modes[0], "'; lumen computes mean, cls, max and lasttoken");
}

}  // namespace

SentenceEncoder::SentenceEncoder(const std::string& dir, const SentenceEncoderOptions& options) : options_(options) {
  fs::path d(dir);
  if (!fs::is_directory(d)) fail("sentence encoder: '", dir, "' is not a model directory");
  config_ = BertConfig::from_file((d / "config.json").string());
  weights_ = io::WeightStore::from_safetensors(dir);
  tokenizer_ = io::load_tokenizer_json((d / "tokenizer.json").string());
  pad_id_ = tokenizer_->pad_id().value_or(0);
  // sentence-transformers: mean pooling unless the pooling config says otherwise; Normalize if listed.
  if (fs::exists(d / "modules.json")) {
    for (const auto& m : read_json(d / "modules.json")) {
      std::string type = m.is_object() && m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>() : "";
      if (type.find("Normalize") != std::string::npos) normalize_ = true;
      if (type.find("Pooling") != std::string::npos) {
        std::string folder = m.contains("path") && m["path"].is_string() ? m["path"].get<std::string>() : "1_Pooling";
        fs::path pooling = d / folder / "config.json";
        if (fs::exists(pooling)) pooling_ = read_pooling(pooling);
      } else if (type.find("Transformer") == std::string::npos && type.find("Normalize") == std::string::npos) {
        fail("sentence encoder: module '", type, "' in modules.json is not supported (Transformer, Pooling, Normalize)");
      }
    }
  }
  max_length_ = options.max_length;
  if (max_length_ <= 0 && fs::exists(d / "sentence_bert_config.json")) {
    nlohmann::json sb = read_json(d / "sentence_bert_config.json");
    if (sb.contains("max_seq_length") && !sb["max_seq_length"].is_null()) {
      if (!sb["max_seq_length"].is_number_integer()) {
        fail("sentence encoder: sentence_bert_config.json: max_seq_length must be an integer, got ", sb["max_seq_length"].dump());
      }
      max_length_ = sb["max_seq_length"].get<int64_t>();
    }
  }
  if (max_length_ <= 0) max_length_ = tokenizer_->max_length().value_or(512);
  max_length_ = std::min(max_length_, config_.max_position);
  tokenizer_->set_max_length(max_length_);
  pooled_ = build(true, options.compile.search_budget_s);
}

std::unique_ptr<Program> SentenceEncoder::build(bool pooled, double budget_s) {
  auto start = std::chrono::steady_clock::now();
  Graph g;
  Tensor out;
  {
    nn::ScopedParameterSource source(*weights_);
    Bert model(g, config_);
    // Sequences are padded to a multiple of kSeqBlock tokens, so kernels can
    // vectorize and tile along them although their length is dynamic.
    Expr batch = g.dim("batch"), seq = Expr(kSeqBlock) * g.dim("seq_blocks");
    Tensor ids = g.input("ids", {batch, seq}, DType::I32);
    Tensor mask = g.input("mask", {batch, seq});
    Tensor hidden = model(ids, mask);
    out = pooled ? Bert::pool(hidden, mask, pooling_, normalize_) : hidden;
  }
  if (!pooled_) {  // the first program declares every parameter: check the checkpoint before compiling
    unused_weights_ = models::unused_weights(*weights_);
    // The pooler (BertModel's CLS head) is not part of a sentence-transformers embedding.
    refuse_unused_weights(*weights_, {"pooler.dense.weight", "pooler.dense.bias", "embeddings.position_ids"}, "sentence encoder");
  }
  CompileOptions o = options_.compile;
  o.search_budget_s = budget_s;
  if (!o.tune_dims.count("batch")) o.tune_dims["batch"] = 8;  // tune for 8 sentences of 128 tokens
  if (!o.tune_dims.count("seq_blocks")) o.tune_dims["seq_blocks"] = 128 / kSeqBlock;
  auto p = std::make_unique<Program>(compile(g, {out}, o));
  for (NodeId id : p->graph().input_ids()) {
    const Node& n = p->graph().node(id);
    auto it = weights_->inputs().find(n.name);
    if (it != weights_->inputs().end()) p->set(n.name, it->second);
  }
  compile_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

std::vector<int32_t> SentenceEncoder::tokenize(const std::string& text) const {
  return tokenizer_->encode(text, true);  // truncated to max_length_, special tokens kept
}

namespace {

// ids and mask padded with `pad` / 0 to a multiple of `block` tokens.
std::pair<Array, Array> padded(const Array& ids, const Array& mask, int64_t block, int32_t pad) {
  if (ids.shape().size() != 2 || mask.shape() != ids.shape() || ids.dtype() != DType::I32 || mask.dtype() != DType::F32) {
    fail("sentence encoder: ids (i32) and mask (f32) must both be [batch, seq]; got ", shape_string(ids.shape()), " and ",
         shape_string(mask.shape()));
  }
  int64_t n = ids.shape()[0], seq = ids.shape()[1], to = std::max<int64_t>(block, (seq + block - 1) / block * block);
  if (to == seq) return {ids, mask};
  Array i(DType::I32, {n, to}), m(DType::F32, {n, to});
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t t = 0; t < to; ++t) {
      i.set(r * to + t, t < seq ? ids.get(r * seq + t) : pad);
      m.set(r * to + t, t < seq ? mask.get(r * seq + t) : 0.0);
    }
  }
  return {i, m};
}

}  // namespace

Array SentenceEncoder::run(Program& p, const Array& ids, const Array& mask) {
  auto [i, m] = padded(ids, mask, kSeqBlock, pad_id_);
  p.set("ids", i);
  p.set("mask", m);
  p.bind("seq_blocks", i.shape()[1] / kSeqBlock);
  p.run();
  return p.get("out0");
}

Array SentenceEncoder::pooled(const Array& ids, const Array& mask) { return run(*pooled_, ids, mask); }

Array SentenceEncoder::hidden(const Array& ids, const Array& mask) {
  if (!hidden_) hidden_ = build(false, 0);
  Array h = run(*hidden_, ids, mask);
  int64_t seq = ids.shape()[1];
  if (h.shape()[1] == seq) return h;
  Array out(DType::F32, {h.shape()[0], seq, h.shape()[2]});  // drop the padding rows
  for (int64_t b = 0; b < h.shape()[0]; ++b) {
    std::memcpy(static_cast<float*>(out.data()) + b * seq * h.shape()[2],
                static_cast<const float*>(h.data()) + b * h.shape()[1] * h.shape()[2],
                static_cast<size_t>(seq * h.shape()[2]) * sizeof(float));
  }
  return out;
}

Array SentenceEncoder::embed(const std::vector<std::string>& texts, int64_t batch_size) {
  if (batch_size <= 0) fail("embed: batch_size must be positive, got ", batch_size);
  Array out(DType::F32, {static_cast<int64_t>(texts.size()), config_.dim});
  for (size_t first = 0; first < texts.size(); first += static_cast<size_t>(batch_size)) {
    size_t n = std::min(texts.size() - first, static_cast<size_t>(batch_size));
    std::vector<std::vector<int32_t>> rows;
    size_t longest = 1;
    for (size_t i = 0; i < n; ++i) {
      rows.push_back(tokenize(texts[first + i]));
      longest = std::max(longest, rows.back().size());
    }
    longest = (longest + kSeqBlock - 1) / kSeqBlock * kSeqBlock;
    Array ids(DType::I32, {static_cast<int64_t>(n), static_cast<int64_t>(longest)});
    Array mask(DType::F32, {static_cast<int64_t>(n), static_cast<int64_t>(longest)});
    auto* id_data = static_cast<int32_t*>(ids.data());
    auto* mask_data = static_cast<float*>(mask.data());
    for (size_t i = 0; i < n; ++i) {
      for (size_t t = 0; t < longest; ++t) {
        bool real = t < rows[i].size();
        id_data[i * longest + t] = real ? rows[i][t] : pad_id_;
        mask_data[i * longest + t] = real ? 1.0f : 0.0f;
      }
    }
    Array e = pooled(ids, mask);
    std::memcpy(static_cast<float*>(out.data()) + first * static_cast<size_t>(config_.dim), e.data(), e.nbytes());
  }
  return out;
}

}  // namespace lumen::models
