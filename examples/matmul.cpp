#include <iostream>
#include "lumen/lumen.h"
int main() {
  lumen::Graph g;
  auto a = g.input("a", {3, 1}), b = g.input("b", {1, 4});
  auto c = a.matmul(b);                      // recorded, not run
  auto program = lumen::compile(g, {c});
  program.set("a", {1.f, 2.f, 3.f});
  program.set("b", {1.f, 2.f, 3.f, 4.f});
  program.run();
  std::cout << program.get(c) << "\n";
}
