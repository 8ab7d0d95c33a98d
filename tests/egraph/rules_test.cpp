// Every rule in default_rules() has a randomized equivalence test: random
// small graphs where the rule fires, the rule alone applied, and every
// distinct candidate the extractor then returns evaluated on the interpreter
// against the original (exact where the rule is exact in floating point).
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>

#include "lumen/core/tensor.h"
#include "lumen/egraph/extract.h"
#include "lumen/egraph/rules.h"
#include "lumen/egraph/saturate.h"
#include "tests/egraph/egraph_test_util.h"

namespace lumen::egraph {
namespace {

using testing::evaluate;
using testing::expect_same;
using testing::random_inputs;

using Rng = std::mt19937;
using Builder = std::function<void(Graph&, Rng&)>;

int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

Shape random_shape(Rng& rng, size_t rank) {
  Shape s;
  for (size_t d = 0; d < rank; ++d) s.push_back(Expr(pick(rng, 1, 5)));
  return s;
}

struct RuleCase {
  Builder build;
  bool exact;  // the rule holds bit for bit in floating point
};

// x [m, 1] and the same shape broadcast to [m, n].
Tensor column(Graph& g, const std::string& name, const Shape& wide) {
  return g.input(name, {wide[0], Expr(1)}).expand(wide);
}

Tensor reduce(const Tensor& t, bool sum, int axis) { return sum ? t.sum_reduce(axis) : t.max_reduce(axis); }

void algebra_cases(std::map<std::string, RuleCase>& c) {
  auto two = [](Op op) -> Builder {
    return [op](Graph& g, Rng& rng) {
      Shape s = random_shape(rng, 2);
      Tensor a = g.input("a", s), b = g.input("b", s);
      g.mark_output(op == Op::Add ? a + b : a * b);
    };
  };
  c["add-comm"] = {two(Op::Add), true};
  c["mul-comm"] = {two(Op::Mul), true};
  c["add-assoc"] = {[](Graph& g, Rng& rng) {
                      Shape s = random_shape(rng, 2);
                      g.mark_output((g.input("a", s) + g.input("b", s)) + g.input("c", s));
                    }, false};
  c["mul-assoc"] = {[](Graph& g, Rng& rng) {
                      Shape s = random_shape(rng, 2);
                      g.mark_output((g.input("a", s) * g.input("b", s)) * g.input("c", s));
                    }, false};
  c["mul-distribute"] = {[](Graph& g, Rng& rng) {
                           Shape s = random_shape(rng, 2);
                           Tensor a = g.input("a", {s[0], Expr(1)}).expand(s);  // through a broadcast, too
                           g.mark_output(a * (g.input("b", s) + g.input("c", s)));
                         }, false};
  c["mul-factor"] = {[](Graph& g, Rng& rng) {
                       Shape s = random_shape(rng, 2);
                       Tensor a = g.input("a", s);
                       g.mark_output(a * g.input("b", s) + a * g.input("c", s));
                     }, false};
  c["add-self"] = {[](Graph& g, Rng& rng) {
                     Tensor a = g.input("a", random_shape(rng, 3)).exp2();
                     g.mark_output(a + a);
                   }, true};
  c["add-zero"] = {[](Graph& g, Rng& rng) { g.mark_output(g.input("a", random_shape(rng, 2)) + 0.0); }, true};
  c["mul-one"] = {[](Graph& g, Rng& rng) { g.mark_output(g.input("a", random_shape(rng, 2)) * 1.0); }, true};
}

void exp2_log2_cases(std::map<std::string, RuleCase>& c) {
  c["exp2-of-sum"] = {[](Graph& g, Rng& rng) {
                        Shape s = random_shape(rng, 2);
                        g.mark_output((g.input("a", s) + g.input("b", s)).exp2());
                      }, false};
  c["exp2-product"] = {[](Graph& g, Rng& rng) {
                         Shape s = random_shape(rng, 2);
                         g.mark_output(g.input("a", s).exp2() * g.input("b", s).exp2());
                       }, false};
  c["log2-exp2"] = {[](Graph& g, Rng& rng) { g.mark_output(g.input("a", random_shape(rng, 2)).exp2().log2()); }, false};
  c["recip-exp2"] = {[](Graph& g, Rng& rng) { g.mark_output(g.input("a", random_shape(rng, 2)).exp2().recip()); }, false};
  c["recip-product"] = {[](Graph& g, Rng& rng) {
                          Shape s = random_shape(rng, 2);
                          g.mark_output((g.input("a", s) * g.input("b", s)).recip());
                        }, false};
  c["recip-recip"] = {[](Graph& g, Rng& rng) { g.mark_output(g.input("a", random_shape(rng, 2)).recip().recip()); }, false};
}

void fold_cases(std::map<std::string, RuleCase>& c) {
  for (Op op : {Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Recip}) {
    std::string name = std::string("fold-") + (op == Op::Exp2 ? "exp2" : op == Op::Log2 ? "log2" : op == Op::Sin ? "sin"
                                                                          : op == Op::Sqrt ? "sqrt" : "recip");
    c[name] = {[op](Graph& g, Rng& rng) {
                 Shape s = random_shape(rng, 2);
                 double v = static_cast<double>(pick(rng, 1, 40)) / 8.0;
                 Tensor k = g.constant(v).reshape({Expr(1), Expr(1)}).expand(s);
                 Tensor y = op == Op::Exp2 ? k.exp2() : op == Op::Log2 ? k.log2() : op == Op::Sin ? k.sin()
                            : op == Op::Sqrt ? k.sqrt() : k.recip();
                 g.mark_output(y + g.input("x", s));
               }, true};
  }
  auto fold2 = [](bool add) -> Builder {
    return [add](Graph& g, Rng& rng) {
      Tensor a = g.constant(static_cast<double>(pick(rng, -20, 20)) / 4.0);
      Tensor b = g.constant(static_cast<double>(pick(rng, -20, 20)) / 3.0);
      g.mark_output(add ? a + b : a * b);
    };
  };
  c["fold-add"] = {fold2(true), true};
  c["fold-mul"] = {fold2(false), true};
}

void view_cases(std::map<std::string, RuleCase>& c) {
  for (Op op : {Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Recip, Op::Cast}) {
    const char* n = op == Op::Exp2 ? "exp2" : op == Op::Log2 ? "log2" : op == Op::Sin ? "sin" : op == Op::Sqrt ? "sqrt"
                    : op == Op::Recip ? "recip" : "cast";
    c[std::string(n) + "-before-view"] = {[op](Graph& g, Rng& rng) {
                                            Shape s = random_shape(rng, 2);
                                            s[1] = Expr(pick(rng, 2, 6));
                                            Tensor x = column(g, "x", s).transpose(0, 1);
                                            Tensor y = op == Op::Exp2 ? x.exp2() : op == Op::Log2 ? x.log2() : op == Op::Sin ? x.sin()
                                                       : op == Op::Sqrt ? x.sqrt() : op == Op::Recip ? x.recip()
                                                                                     : x.cast(DType::I32);
                                            g.mark_output(y);
                                          }, true};
  }
  for (Op op : {Op::Add, Op::Mul, Op::Mod, Op::LessThan}) {
    const char* n = op == Op::Add ? "add" : op == Op::Mul ? "mul" : op == Op::Mod ? "mod" : "lt";
    c[std::string(n) + "-before-view"] = {[op](Graph& g, Rng& rng) {
                                            Shape s = random_shape(rng, 2);
                                            s[1] = Expr(pick(rng, 2, 6));
                                            Tensor a = column(g, "a", s);
                                            // Half the cases: two operands under one view; else a scalar constant.
                                            Tensor b = rng() % 2 ? column(g, "b", s) : a.scalar(0.75).reshape({Expr(1), Expr(1)}).expand(s);
                                            Tensor y = op == Op::Add ? a.add(b) : op == Op::Mul ? a.mul(b) : op == Op::Mod ? a.mod(b)
                                                                                                    : a.less_than(b);
                                            g.mark_output(y);
                                          }, true};
  }
}

void reduction_cases(std::map<std::string, RuleCase>& c) {
  auto swap = [](bool sum) -> Builder {
    return [sum](Graph& g, Rng& rng) {
      Tensor x = g.input("x", random_shape(rng, 3));
      int i = static_cast<int>(pick(rng, 0, 2));
      int j = static_cast<int>(pick(rng, 0, 1));
      g.mark_output(reduce(reduce(x, sum, i), sum, j));
    };
  };
  c["sum-swap"] = {swap(true), false};
  c["max-swap"] = {swap(false), true};
  auto merge = [](bool sum) -> Builder {
    return [sum](Graph& g, Rng& rng) {
      Tensor x = g.input("x", random_shape(rng, 3));
      int j = static_cast<int>(pick(rng, 0, 1));
      g.mark_output(reduce(reduce(x, sum, j), sum, j));
    };
  };
  c["sum-merge-axes"] = {merge(true), false};
  c["max-merge-axes"] = {merge(false), true};
  auto split = [](bool sum) -> Builder {
    return [sum](Graph& g, Rng& rng) {
      const int64_t sizes[] = {256, 320, 384, 512};
      Shape s{Expr(pick(rng, 1, 2)), Expr(sizes[pick(rng, 0, 3)])};
      bool last = rng() % 2;
      if (!last) std::swap(s[0], s[1]);
      g.mark_output(reduce(g.input("x", s), sum, last ? 1 : 0));
    };
  };
  c["sum-split"] = {split(true), false};
  c["max-split"] = {split(false), true};
  c["sum-of-add"] = {[](Graph& g, Rng& rng) {
                       Shape s = random_shape(rng, 2);
                       g.mark_output((g.input("a", s) + g.input("b", s)).sum_reduce(static_cast<int>(pick(rng, 0, 1))));
                     }, false};
  c["add-of-sums"] = {[](Graph& g, Rng& rng) {
                        Shape s = random_shape(rng, 2);
                        int k = static_cast<int>(pick(rng, 0, 1));
                        g.mark_output(g.input("a", s).sum_reduce(k) + g.input("b", s).sum_reduce(k));
                      }, false};
  auto factor_out = [](bool sum) -> Builder {
    return [sum](Graph& g, Rng& rng) {
      Shape s = random_shape(rng, 2);
      Tensor a = column(g, "a", s), b = g.input("b", s);
      g.mark_output(sum ? (a * b).sum_reduce(1) : (a + b).max_reduce(1));
    };
  };
  c["sum-factor-out"] = {factor_out(true), false};
  c["max-factor-out"] = {factor_out(false), true};
  auto factor_in = [](bool sum) -> Builder {
    return [sum](Graph& g, Rng& rng) {
      Shape s = random_shape(rng, 2);
      Tensor a = g.input("a", {s[0]}), b = g.input("b", s);
      g.mark_output(sum ? a * b.sum_reduce(1) : a + b.max_reduce(1));
    };
  };
  c["sum-factor-in"] = {factor_in(true), false};
  c["max-factor-in"] = {factor_in(false), true};
  c["max-exp2"] = {[](Graph& g, Rng& rng) {
                     Shape s = random_shape(rng, 3);
                     g.mark_output(g.input("x", s).exp2().max_reduce(static_cast<int>(pick(rng, 0, 2))));
                   }, true};
}

std::map<std::string, RuleCase> cases() {
  std::map<std::string, RuleCase> c;
  algebra_cases(c);
  exp2_log2_cases(c);
  fold_cases(c);
  view_cases(c);
  reduction_cases(c);
  return c;
}

TEST(EgraphRules, EveryRuleHasAnEquivalenceCase) {
  std::map<std::string, RuleCase> all = cases();
  std::set<std::string> names;
  for (const Rule& r : default_rules()) {
    EXPECT_TRUE(names.insert(r.name).second) << "two rules are named " << r.name;
    EXPECT_TRUE(all.count(r.name)) << "rule " << r.name << " has no randomized equivalence case in rules_test.cpp";
  }
  for (const auto& [name, rc] : all) EXPECT_TRUE(names.count(name)) << "a case for a rule that does not exist: " << name;
}

class EachRule : public ::testing::TestWithParam<std::string> {};

TEST_P(EachRule, RewritesEvaluateTheSameOnRandomGraphs) {
  const std::string name = GetParam();
  std::vector<Rule> only;
  for (Rule& r : default_rules()) {
    if (r.name == name) only.push_back(std::move(r));
  }
  ASSERT_EQ(only.size(), 1u);
  RuleCase rc = cases().at(name);
  for (uint32_t seed = 0; seed < 6; ++seed) {
    Rng rng(seed * 7919 + 13);
    Graph g;
    rc.build(g, rng);
    EGraph eg;
    GraphRoots roots = eg.add_graph(g);
    Limits limits;
    limits.max_iterations = 1;
    SaturationReport report = saturate(eg, only, limits);
    ASSERT_GT(report.fired[name], 0u) << name << " did not fire on seed " << seed;
    Extractor extractor(eg, roots, g);
    std::vector<Candidate> candidates = extractor.candidates(8, /*operand_order_matters=*/true);
    ASSERT_GE(candidates.size(), 2u) << name << ": the rewrite gave no distinct candidate (seed " << seed << ")";
    std::set<uint64_t> hashes;
    auto inputs = random_inputs(g, seed);
    auto want = evaluate(g, inputs);
    for (const Candidate& c : candidates) {
      EXPECT_TRUE(hashes.insert(c.hash).second) << name << ": two candidates are the same graph";
      expect_same(want, evaluate(c.graph, inputs), rc.exact ? 0 : 1e-5, rc.exact ? 0 : 1e-6,
                  name + " seed " + std::to_string(seed) + " candidate " + c.label);
    }
  }
}

std::vector<std::string> rule_names() {
  std::vector<std::string> names;
  for (const Rule& r : default_rules()) names.push_back(r.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(All, EachRule, ::testing::ValuesIn(rule_names()), [](const auto& info) {
  std::string n = info.param;
  for (char& ch : n) {
    if (ch == '-') ch = '_';
  }
  return n;
});

}  // namespace
}  // namespace lumen::egraph
