// Helpers shared by the engine tests: a tokenizer whose token i is the
// letter 'a' + i % 26, and tiny Llama weights (all zero, or seeded random).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lumen/io/tokenizer/tokenizer.h"
#include "lumen/io/weight_store.h"
#include "lumen/models/llama.h"
#include "lumen/serve/engine.h"

namespace lumen::serve::testing {

class LetterTokenizer : public io::Tokenizer {
 public:
  std::vector<int32_t> encode(const std::string&, bool, bool) const override { return {}; }
  std::string decode(const std::vector<int32_t>& ids, bool) const override {
    std::string s;
    for (int32_t id : ids) s += static_cast<char>('a' + id % 26);
    return s;
  }
  std::string decode_strict(const std::vector<int32_t>& ids, bool skip) const override { return decode(ids, skip); }
  int64_t vocab_size() const override { return 64; }
  std::optional<int32_t> token_to_id(const std::string&) const override { return std::nullopt; }
  std::string id_to_token(int32_t id) const override { return std::string(1, static_cast<char>('a' + id % 26)); }
  void set_max_length(std::optional<int64_t>) override {}
};

// Every parameter of the model `config` builds: zero, or (seed > 0) random
// normal scaled by 1 / sqrt(fan-in), norms near 1 — logits far enough apart
// that greedy decoding does not hinge on rounding.
inline std::shared_ptr<io::WeightStore> llama_weights(const models::LlamaConfig& config, uint64_t seed) {
  auto store = std::make_shared<io::WeightStore>();
  Graph probe;
  models::Llama model(probe, config);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (NodeId id : probe.input_ids()) {
    const Node& n = probe.node(id);
    std::vector<int64_t> shape;
    for (const Expr& d : n.shape) shape.push_back(d.value());
    Array a(DType::F32, shape);
    if (seed > 0) {
      bool norm = n.name.find("norm") != std::string::npos;
      float scale = norm ? 0.1f : 1.0f / std::sqrt(static_cast<float>(shape.back()));
      if (n.name.find("embed_tokens") != std::string::npos) scale = 1.0f;
      float* data = static_cast<float*>(a.data());
      for (int64_t i = 0; i < a.numel(); ++i) data[i] = (norm ? 1.0f : 0.0f) + scale * normal(rng);
    }
    store->add(n.name, {io::WeightFormat::Plain, shape, a, {}, {}, n.name});
  }
  return store;
}

// A submission's tokens, text and outcome, waited for.
struct Result {
  std::mutex mutex;
  std::condition_variable cv;
  std::string text;
  std::vector<int32_t> tokens;  // those that produced text
  std::optional<Outcome> outcome;
  Engine::OnText on_text() {
    return [this](int32_t token, const std::string& piece) {
      std::lock_guard<std::mutex> lock(mutex);
      text += piece;
      if (token >= 0) tokens.push_back(token);
      cv.notify_all();
    };
  }
  Engine::OnDone on_done() {
    return [this](const Outcome& o) {
      std::lock_guard<std::mutex> lock(mutex);
      outcome = o;
      cv.notify_all();
    };
  }
  Outcome wait() {
    std::unique_lock<std::mutex> lock(mutex);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return outcome.has_value(); }));
    return outcome.value_or(Outcome{FinishReason::Error, 0, 0, "timed out"});
  }
  // Waits until `n` tokens have produced text (or the request ended).
  void wait_tokens(size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait_for(lock, std::chrono::seconds(120), [&] { return tokens.size() >= n || outcome.has_value(); });
  }
};

inline RequestParams greedy(int64_t max_tokens) {
  RequestParams p;
  p.max_tokens = max_tokens;
  return p;
}

}  // namespace lumen::serve::testing
