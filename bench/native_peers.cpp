// Native peers for the benchmark harness: oneDNN and OpenBLAS sgemm/sgemv,
// and oneDNN's bf16 matmul (impl onednn_bf16: bf16 A [M, K] and B [K, N] in
// plain row-major layout, f32 C; the primitive it picked goes to stderr).
// A long-lived process so the harness can interleave single runs with the
// Python-side implementations. Protocol, one request per line on stdin:
//   setup <name> <impl> <M> <N> <K>   -> "ok" (allocates and fills the operands)
//   run <name>                        -> elapsed milliseconds of one call
//   quit
// M = 1 is a matrix-vector product (sgemv) with weights [N, K].
#include <cblas.h>
#include <dnnl.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

// A oneDNN matmul primitive with its memories (onednn_bf16).
struct Bf16Matmul {
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t a = nullptr, b = nullptr, c = nullptr;
};

struct Problem {
  std::string impl;
  long m, n, k;
  std::vector<float> a, b, c;
  std::vector<uint16_t> a16, b16;
  std::shared_ptr<Bf16Matmul> bf16;
};

uint16_t to_bf16(float x) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

void check(dnnl_status_t s, const char* what) {
  if (s != dnnl_success) throw std::runtime_error(std::string("oneDNN ") + what + " failed: status " + std::to_string(s));
}

std::shared_ptr<Bf16Matmul> make_bf16_matmul(Problem& p) {
  auto mm = std::make_shared<Bf16Matmul>();
  check(dnnl_engine_create(&mm->engine, dnnl_cpu, 0), "engine");
  check(dnnl_stream_create(&mm->stream, mm->engine, dnnl_stream_default_flags), "stream");
  dnnl_memory_desc_t a_md, b_md, c_md;
  dnnl_dims_t a_dims = {p.m, p.k}, b_dims = {p.k, p.n}, c_dims = {p.m, p.n};
  check(dnnl_memory_desc_init_by_tag(&a_md, 2, a_dims, dnnl_bf16, dnnl_ab), "src desc");
  check(dnnl_memory_desc_init_by_tag(&b_md, 2, b_dims, dnnl_bf16, dnnl_ab), "weights desc");
  check(dnnl_memory_desc_init_by_tag(&c_md, 2, c_dims, dnnl_f32, dnnl_ab), "dst desc");
  dnnl_matmul_desc_t desc;
  check(dnnl_matmul_desc_init(&desc, &a_md, &b_md, nullptr, &c_md), "matmul desc");
  dnnl_primitive_desc_t pd;
  check(dnnl_primitive_desc_create(&pd, &desc, nullptr, mm->engine, nullptr), "primitive desc");
  const char* impl = nullptr;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  std::fprintf(stderr, "native_peers: oneDNN bf16 matmul %ldx%ldx%ld uses %s\n", p.m, p.n, p.k, impl ? impl : "?");
  check(dnnl_primitive_create(&mm->primitive, pd), "primitive");
  dnnl_primitive_desc_destroy(pd);
  check(dnnl_memory_create(&mm->a, &a_md, mm->engine, p.a16.data()), "src memory");
  check(dnnl_memory_create(&mm->b, &b_md, mm->engine, p.b16.data()), "weights memory");
  check(dnnl_memory_create(&mm->c, &c_md, mm->engine, p.c.data()), "dst memory");
  return mm;
}

void fill(std::vector<float>& v, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  for (float& x : v) x = d(rng);
}

double run(Problem& p) {
  auto start = std::chrono::steady_clock::now();
  if (p.bf16) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, p.bf16->a}, {DNNL_ARG_WEIGHTS, p.bf16->b}, {DNNL_ARG_DST, p.bf16->c}};
    check(dnnl_primitive_execute(p.bf16->primitive, p.bf16->stream, 3, args), "execute");
    check(dnnl_stream_wait(p.bf16->stream), "stream wait");
  } else if (p.m == 1) {  // y[N] = W[N, K] x[K]
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
      if (p.impl != "openblas" && p.impl != "onednn" && p.impl != "onednn_bf16") {
        std::cout << "error unknown impl " << p.impl << std::endl;
        continue;
      }
      p.a.resize(static_cast<size_t>(p.m * p.k));
      p.b.resize(static_cast<size_t>(p.k * p.n));
      p.c.resize(static_cast<size_t>(p.m * p.n));
      fill(p.a, 1);
      fill(p.b, 2);
      if (p.impl == "onednn_bf16") {
        for (float x : p.a) p.a16.push_back(to_bf16(x));
        for (float x : p.b) p.b16.push_back(to_bf16(x));
        try {
          p.bf16 = make_bf16_matmul(p);
        } catch (const std::exception& e) {
          std::cout << "error " << e.what() << std::endl;
          continue;
        }
      }
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
