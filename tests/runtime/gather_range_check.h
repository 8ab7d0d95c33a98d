// The graph y = x.gather(i) over 4 values and 3 indices, compiled by
// `compile_it`: an in-range run reads the right value, and an index out of
// range (9) raises the lumen::Error that names it, on any backend.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "lumen/compile.h"

namespace lumen {

inline void expect_gather_range_error(const std::function<Program(const Graph&)>& compile_it) {
  Graph g;
  Tensor x = g.input("x", {Expr(4)});
  Tensor i = g.input("i", {Expr(3)}, DType::I32);
  g.mark_output(x.gather(i, 0), "y");
  Program p = compile_it(g);
  p.set("x", {1.0f, 2.0f, 3.0f, 4.0f});
  p.set("i", std::vector<int32_t>{0, 3, 1});
  p.run();
  EXPECT_EQ(p.get("y").get(1), 4.0);
  p.set("i", std::vector<int32_t>{0, 9, 1});
  try {
    p.run();
    ADD_FAILURE() << "an out-of-range gather index ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 9 is out of range"), std::string::npos) << e.what();
  }
}

}  // namespace lumen
