// Shared by the e-graph tests: random inputs for a graph, evaluation on the
// reference interpreter (outputs and state-update values), and comparison.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lumen/backend/interp/interpreter.h"
#include "lumen/core/array.h"
#include "lumen/core/graph.h"

namespace lumen::egraph::testing {

inline std::map<std::string, Array> random_inputs(const Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::map<std::string, Array> inputs;
  for (NodeId id : g.input_ids()) {
    const Node& n = g.node(id);
    std::vector<int64_t> shape;
    for (const Expr& d : n.shape) shape.push_back(d.value());
    Array a(n.dtype, shape);
    for (int64_t i = 0; i < a.numel(); ++i) {
      if (is_float(n.dtype)) a.set(i, uniform(rng));
      else if (n.dtype == DType::Bool) a.set(i, static_cast<double>(rng() % 2));
      else a.set(i, static_cast<double>(rng() % 4));  // small: valid gather indices for test tables
    }
    inputs.emplace(n.name, std::move(a));
  }
  return inputs;
}

// Every output, then every state update's value, in order.
inline std::vector<Array> evaluate(const Graph& g, const std::map<std::string, Array>& inputs) {
  std::vector<Edge> edges;
  for (const NamedOutput& o : g.outputs()) edges.push_back(o.edge);
  for (const StateUpdate& u : g.updates()) edges.push_back(u.value);
  return interp::Interpreter(g).run(inputs, edges);
}

// Equal within `rtol`/`atol` (0, 0: bit-for-bit as doubles); NaN equals NaN.
inline void expect_same(const std::vector<Array>& want, const std::vector<Array>& got, double rtol, double atol,
                        const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(want[k].shape(), got[k].shape()) << what << " output " << k;
    ASSERT_EQ(want[k].dtype(), got[k].dtype()) << what << " output " << k;
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      double a = want[k].get(i), b = got[k].get(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;
      ASSERT_LE(std::abs(a - b), atol + rtol * std::abs(a)) << what << " output " << k << " element " << i;
    }
  }
}

}  // namespace lumen::egraph::testing
