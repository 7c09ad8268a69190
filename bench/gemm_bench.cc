// GEMM throughput: slimpack's fixed-order GEMM (runtime/gemm.h), per
// micro-kernel this CPU has, against OpenBLAS sgemm on one thread.
//   build/bench/gemm_bench --benchmark_counters_tabular=true
// Shapes: square products, a convolution's im2col product (64 output
// channels, 3x3x64 taps, 56x56 positions), a prompt-length decoder
// projection (128 tokens x 1024 -> 1024) and a one-token matmul.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "runtime/gemm.h"

#ifdef SLIMPACK_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

namespace gemm = slimpack::runtime::gemm;

struct Operands {
  std::vector<float> a, b, c;
  Operands(int64_t m, int64_t n, int64_t k) : a(m * k), b(k * n), c(m * n) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& v : a) v = u(rng);
    for (float& v : b) v = u(rng);
  }
};

void SetFlops(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * m * n * k * state.iterations(), benchmark::Counter::kIsRate,
      benchmark::Counter::OneK::kIs1000);
  state.counters["GFLOP/s"].value /= 1e9;
}

void BM_Ours(benchmark::State& state, bool (*pick)(gemm::MicroKernel*)) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  gemm::MicroKernel kern;
  if (!pick(&kern)) {
    state.SkipWithError("micro-kernel not available on this CPU");
    return;
  }
  Operands o(m, n, k);
  for (auto _ : state) {
    auto st = slimpack::runtime::SgemmWithKernel(kern, false, false, m, n, k, 1.0f,
                                                 o.a.data(), k, o.b.data(), n, 0.0f,
                                                 o.c.data(), n);
    benchmark::DoNotOptimize(st);
    benchmark::DoNotOptimize(o.c.data());
  }
  SetFlops(state, m, n, k);
}

#ifdef SLIMPACK_HAVE_OPENBLAS
void BM_OpenBlas(benchmark::State& state) {
  openblas_set_num_threads(1);
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Operands o(m, n, k);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, o.a.data(), k,
                o.b.data(), n, 0.0f, o.c.data(), n);
    benchmark::DoNotOptimize(o.c.data());
  }
  SetFlops(state, m, n, k);
}
#endif

void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k"});
  b->Args({256, 256, 256});
  b->Args({1024, 1024, 1024});
  b->Args({64, 3136, 576});
  b->Args({128, 1024, 1024});
  b->Args({1, 1024, 1024});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(BM_Ours, avx512, gemm::Avx512Kernel)->Apply(Shapes);
BENCHMARK_CAPTURE(BM_Ours, avx2, gemm::Avx2Kernel)->Apply(Shapes);
BENCHMARK_CAPTURE(BM_Ours, sse2_exact_fma, gemm::Sse2Kernel)->Apply(Shapes);
BENCHMARK_CAPTURE(BM_Ours, generic, gemm::GenericKernel)->Apply(Shapes);
#ifdef SLIMPACK_HAVE_OPENBLAS
BENCHMARK(BM_OpenBlas)->Apply(Shapes);
#endif

}  // namespace

BENCHMARK_MAIN();
