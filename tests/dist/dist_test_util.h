// Helpers for the distributed tests: seeded random weights (identical on every rank).
#pragma once

#include <cmath>
#include <memory>
#include <random>

#include "lumen/io/weight_store.h"
#include "lumen/models/bert.h"
#include "lumen/models/llama.h"

namespace lumen::dist::test_util {

template <typename Build>
std::shared_ptr<io::WeightStore> random_weights(Build build, uint64_t seed, float scale = 0.2f) {
  auto store = std::make_shared<io::WeightStore>();
  Graph probe;
  build(probe);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> normal(0.0f, scale);
  for (NodeId id : probe.input_ids()) {
    const Node& n = probe.node(id);
    if (n.persistent) continue;
    std::vector<int64_t> shape;
    for (const Expr& d : n.shape) shape.push_back(d.value());
    Array a(DType::F32, shape);
    auto* p = static_cast<float*>(a.data());
    bool norm = n.name.find("norm") != std::string::npos || n.name.find("LayerNorm") != std::string::npos;
    for (int64_t i = 0; i < a.numel(); ++i) p[i] = norm && n.name.find("weight") != std::string::npos ? 1.0f + normal(rng) : normal(rng);
    store->add(n.name, {io::WeightFormat::Plain, shape, a, {}, {}, n.name});
  }
  return store;
}

inline std::shared_ptr<io::WeightStore> random_llama_weights(const models::LlamaConfig& c, uint64_t seed) {
  return random_weights([&](Graph& g) { models::Llama model(g, c); }, seed);
}

inline std::shared_ptr<io::WeightStore> random_bert_weights(const models::BertConfig& c, uint64_t seed) {
  return random_weights([&](Graph& g) { models::Bert model(g, c); }, seed);
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace lumen::dist::test_util
