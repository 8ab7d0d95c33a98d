// Native peers for the benchmark harness: oneDNN and OpenBLAS sgemm/sgemv.
// A long-lived process so the harness can interleave single runs with the
// Python-side implementations. Protocol, one request per line on stdin:
//   setup <name> <impl> <M> <N> <K>   -> "ok" (allocates and fills the operands)
//   run <name>                        -> elapsed milliseconds of one call
//   quit
// M = 1 is a matrix-vector product (sgemv) with weights [N, K].
#include <cblas.h>
#include <dnnl.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Problem {
  std::string impl;
  long m, n, k;
  std::vector<float> a, b, c;
};

void fill(std::vector<float>& v, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  for (float& x : v) x = d(rng);
}

double run(Problem& p) {
  auto start = std::chrono::steady_clock::now();
  if (p.m == 1) {  // y[N] = W[N, K] x[K]
    if (p.impl == "openblas") {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(p.n), static_cast<int>(p.k), 1.0f, p.b.data(),
                  static_cast<int>(p.k), p.a.data(), 1, 0.0f, p.c.data(), 1);
    } else {
      dnnl_sgemm('N', 'T', 1, p.n, p.k, 1.0f, p.a.data(), p.k, p.b.data(), p.k, 0.0f, p.c.data(), p.n);
    }
  } else if (p.impl == "openblas") {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(p.m), static_cast<int>(p.n),
                static_cast<int>(p.k), 1.0f, p.a.data(), static_cast<int>(p.k), p.b.data(), static_cast<int>(p.n), 0.0f,
                p.c.data(), static_cast<int>(p.n));
  } else {
    dnnl_sgemm('N', 'N', p.m, p.n, p.k, 1.0f, p.a.data(), p.k, p.b.data(), p.n, 0.0f, p.c.data(), p.n);
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main() {
  std::map<std::string, Problem> problems;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd, name;
    in >> cmd >> name;
    if (cmd == "quit") break;
    if (cmd == "setup") {
      Problem p;
      in >> p.impl >> p.m >> p.n >> p.k;
      if (p.impl != "openblas" && p.impl != "onednn") {
        std::cout << "error unknown impl " << p.impl << std::endl;
        continue;
      }
      p.a.resize(static_cast<size_t>(p.m * p.k));
      p.b.resize(static_cast<size_t>(p.k * p.n));
      p.c.resize(static_cast<size_t>(p.m * p.n));
      fill(p.a, 1);
      fill(p.b, 2);
      problems[name] = std::move(p);
      std::cout << "ok" << std::endl;
    } else if (cmd == "run") {
      auto it = problems.find(name);
      if (it == problems.end()) {
        std::cout << "error no problem " << name << std::endl;
        continue;
      }
      std::printf("%.6f\n", run(it->second));
      std::fflush(stdout);
    } else {
      std::cout << "error unknown command " << cmd << std::endl;
    }
  }
  return 0;
}
