// Shared helpers for the comprehension tests: seeded inputs, and running a
// comprehension's graph on a backend.
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lumen/compile.h"
#include "lumen/tc/comprehension.h"

namespace lumen::tc::testing {

// Seeded values in [lo, hi] (integers for int dtypes).
inline Array random_array(DType dtype, const std::vector<int64_t>& shape, uint32_t seed, double lo = -2, double hi = 2) {
  Array a(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < a.numel(); ++i) {
    double v = dist(rng);
    a.set(i, is_float(dtype) ? v : std::round(v));
  }
  return a;
}

struct TcInput {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};

using BuildFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Declares `inputs` (seeded random data), builds outputs with `build`,
// compiles for `backend` and returns the outputs' values.
inline std::vector<Array> run_graph(const std::vector<TcInput>& inputs, const BuildFn& build, Backend backend, uint32_t seed = 1) {
  Graph g;
  std::vector<Tensor> tensors;
  std::map<std::string, Array> feeds;
  uint32_t s = seed;
  for (const TcInput& in : inputs) {
    Shape shape;
    for (int64_t d : in.shape) shape.push_back(Expr(d));
    tensors.push_back(g.input(in.name, shape, in.dtype));
    feeds[in.name] = random_array(in.dtype, in.shape, s++);
  }
  std::vector<Tensor> outs = build(tensors);
  CompileOptions options;
  options.backend = backend;
  options.tuning_cache = false;
  Program p = compile(g, outs, options);
  for (auto& [name, a] : feeds) p.set(name, a);
  p.run();
  std::vector<Array> got;
  for (const Tensor& t : outs) got.push_back(p.get(t).clone());
  return got;
}

// Runs comprehension `source` on random inputs, with `scalars` appended
// after the tensors (scalar parameters come last in these tests).
inline std::vector<Array> run_tc(const std::string& source, const std::vector<TcInput>& inputs, const std::vector<Arg>& scalars,
                                 Backend backend, uint32_t seed = 1) {
  Comprehension fn = define(source);
  return run_graph(inputs, [&](const std::vector<Tensor>& ts) {
    std::vector<Arg> args(ts.begin(), ts.end());
    args.insert(args.end(), scalars.begin(), scalars.end());
    return fn(args);
  }, backend, seed);
}

inline void expect_close(const Array& a, const Array& b, double tol = 1e-4) {
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.dtype(), b.dtype());
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), y = b.get(i);
    ASSERT_NEAR(x, y, tol * (1 + std::fabs(y))) << "at flat index " << i;
  }
}

}  // namespace lumen::tc::testing
