// Physical limits of this machine, measured the same way every run:
// FMA peak (independent AVX-512/AVX2 FMA chains per thread) and STREAM-like
// bandwidths (triad with ordinary and non-temporal stores, read-only sum).
// Prints JSON: {"fma_gflops": .., "stream_triad_gbs": .., "stream_triad_nt_gbs": .., "read_gbs": ..}
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <typename F>
double run_threads(int threads, F&& f) {
  std::vector<std::thread> pool;
  double start = now();
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { f(t); });
  for (auto& th : pool) th.join();
  return now() - start;
}

__attribute__((target("avx512f"))) double fma_avx512(long iterations) {
  __m512 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(1.0f + i * 1e-7f);
  __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-8f);
  for (long i = 0; i < iterations; ++i) {
    for (int j = 0; j < 12; ++j) a[j] = _mm512_fmadd_ps(a[j], b, c);
  }
  __m512 s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, a[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) double fma_avx2(long iterations) {
  __m256 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps(1.0f + i * 1e-7f);
  __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-8f);
  for (long i = 0; i < iterations; ++i) {
    for (int j = 0; j < 12; ++j) a[j] = _mm256_fmadd_ps(a[j], b, c);
  }
  float out[8];
  __m256 s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, a[i]);
  _mm256_storeu_ps(out, s);
  return out[0];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  __builtin_cpu_init();
  bool avx512 = __builtin_cpu_supports("avx512f");
  long iterations = 20'000'000;
  double best = 0;
  volatile double sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t = run_threads(threads, [&](int) { sink = sink + (avx512 ? fma_avx512(iterations) : fma_avx2(iterations)); });
    double flops = 2.0 * 12 * (avx512 ? 16 : 8) * static_cast<double>(iterations) * threads;
    best = std::max(best, flops / t / 1e9);
  }

  // 256 MiB arrays per stream: far larger than the L3.
  size_t n = (256u << 20) / sizeof(float);
  // 2 MiB aligned and backed by transparent huge pages, as lumen's (and
  // numpy's) large buffers are: the bandwidth a streaming kernel can reach.
  auto buffer = [&](float value) {
    float* p = static_cast<float*>(std::aligned_alloc(size_t{2} << 20, n * sizeof(float)));
    madvise(p, n * sizeof(float), MADV_HUGEPAGE);
    std::fill(p, p + n, value);
    return p;
  };
  float* a = buffer(1.0f);
  float* b = buffer(2.0f);
  float* c = buffer(0.5f);
  auto per_thread = [&](int t, auto body) {
    size_t chunk = n / static_cast<size_t>(threads), begin = chunk * static_cast<size_t>(t);
    body(begin, t == threads - 1 ? n : begin + chunk);
  };
  double triad = 0, triad_nt = 0, read = 0;
  for (int rep = 0; rep < 4; ++rep) {
    double t = run_threads(threads, [&](int th) {
      per_thread(th, [&](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0f * c[i];
      });
    });
    triad = std::max(triad, 3.0 * n * sizeof(float) / t / 1e9);
    t = run_threads(threads, [&](int th) {
      per_thread(th, [&](size_t lo, size_t hi) {
        for (size_t i = lo; i + 16 <= hi; i += 16) {
          __m256 x0 = _mm256_add_ps(_mm256_loadu_ps(&b[i]), _mm256_mul_ps(_mm256_set1_ps(3.0f), _mm256_loadu_ps(&c[i])));
          __m256 x1 = _mm256_add_ps(_mm256_loadu_ps(&b[i + 8]), _mm256_mul_ps(_mm256_set1_ps(3.0f), _mm256_loadu_ps(&c[i + 8])));
          _mm256_stream_ps(&a[i], x0);
          _mm256_stream_ps(&a[i + 8], x1);
        }
      });
    });
    triad_nt = std::max(triad_nt, 3.0 * n * sizeof(float) / t / 1e9);
    std::vector<double> sums(static_cast<size_t>(threads));
    t = run_threads(threads, [&](int th) {
      per_thread(th, [&](size_t lo, size_t hi) {
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (size_t i = lo; i + 32 <= hi; i += 32) {
          s0 = _mm256_add_ps(s0, _mm256_load_ps(&b[i]));
          s1 = _mm256_add_ps(s1, _mm256_load_ps(&b[i + 8]));
          s2 = _mm256_add_ps(s2, _mm256_load_ps(&b[i + 16]));
          s3 = _mm256_add_ps(s3, _mm256_load_ps(&b[i + 24]));
        }
        float out[8];
        _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
        sums[static_cast<size_t>(th)] = out[0];
      });
    });
    read = std::max(read, static_cast<double>(n) * sizeof(float) / t / 1e9);
  }
  std::free(a);
  std::free(b);
  std::free(c);
  std::printf("{\"threads\": %d, \"fma_gflops\": %.1f, \"stream_triad_gbs\": %.1f, \"stream_triad_nt_gbs\": %.1f, \"read_gbs\": %.1f}\n",
              threads, best, triad, triad_nt, read);
  return sink == 12345.0;
}
