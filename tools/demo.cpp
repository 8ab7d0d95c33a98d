// `make demo`: lumen's main job on a built-in default. Today: build a small
// MLP, compile it for the reference interpreter, run it, print the result,
// how long it took, and where the graph picture was written.
#include <chrono>
#include <iostream>
#include <random>

#include "lumen/lumen.h"

int main() {
  using namespace lumen;
  Graph g;
  Tensor x = g.input("x", {4, 16});
  Tensor w1 = g.input("w1", {16, 32}), b1 = g.input("b1", {32});
  Tensor w2 = g.input("w2", {32, 8}), b2 = g.input("b2", {8});
  Tensor h = x.matmul(w1) + b1;
  h = h * (1.0 / (1.0 + (-h).exp()));  // SiLU, composed from primitives
  Tensor y = h.matmul(w2) + b2;
  g.mark_output(y, "y");

  auto start = std::chrono::steady_clock::now();
  Program program = compile(g);
  std::mt19937 rng(0);
  std::normal_distribution<float> normal(0.f, 0.3f);
  for (const char* name : {"x", "w1", "b1", "w2", "b2"}) {
    const Node& n = g.node(g.find_input(name));
    std::vector<int64_t> shape;
    for (const Expr& d : n.shape) shape.push_back(d.value());
    Array a(DType::F32, shape);
    for (int64_t i = 0; i < a.numel(); ++i) a.set(i, normal(rng));
    program.set(name, a);
  }
  program.run();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  size_t compute = 0;
  for (const Node& n : g.nodes()) compute += (n.op != Op::Input && n.op != Op::Constant);
  std::cout << "lumen demo: a 16 -> 32 -> 8 MLP with SiLU, batch 4\n"
            << "  graph: " << g.size() << " nodes (" << compute << " primitive compute ops; matmul = expand, Mul, "
            << "SumReduce; SiLU = Mul, Exp2, Add, Recip)\n"
            << "  backend: " << program.backend_name() << " (the reference interpreter; the compiled CPU backend "
            << "and search come next)\n"
            << "  compile + run: " << ms << " ms\n"
            << "  y[0] = ";
  const Array& out = program.get("y");
  for (int64_t i = 0; i < 8; ++i) std::cout << out.get(i) << (i < 7 ? " " : "\n");
  std::string picture = g.display("build/demo_graph.svg");
  std::cout << "  graph picture: " << picture << "\n";
}
