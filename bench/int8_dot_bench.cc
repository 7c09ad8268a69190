// The byte dot product kernels (runtime/kernels/int8_dot.h) in GMAC/s
// (Google Benchmark counter "MAC"), each instruction set's kernel where
// this CPU has it and the portable loop, on one task of a 1x1 W8A8
// convolution as DotConv runs it: 64 output channels x 256 positions x
// K = 576 input channels. Float's ceiling for comparison: gemm_bench.
//   build/bench/int8_dot_bench
#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "runtime/kernels/int8_dot.h"

namespace {

using slimpack::runtime::kernels::int8dot::Operands;

void Run(benchmark::State& state, bool (*kernel)(const Operands&)) {
  const int64_t rows = 64, cols = 256, kq = 144;
  std::vector<uint8_t> row(rows * kq * 4, 3), panel(kq * cols * 4, 5);
  std::vector<int32_t> out(rows * cols);
  const Operands o{rows, cols, kq, row.data(), kq * 4, panel.data(), cols, true, out.data(), cols};
  if (kernel != nullptr && !kernel(o)) {
    state.SkipWithError("this CPU lacks the instructions");
    return;
  }
  for (auto _ : state) {
    if (kernel != nullptr) {
      kernel(o);
    } else {
      slimpack::runtime::kernels::int8dot::DotPortable(o);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["MAC"] = benchmark::Counter(static_cast<double>(rows * cols * kq * 4),
                                             benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Vnni512(benchmark::State& s) { Run(s, slimpack::runtime::kernels::int8dot::DotVnni512); }
void BM_AvxVnni(benchmark::State& s) { Run(s, slimpack::runtime::kernels::int8dot::DotAvxVnni); }
void BM_Avx2Madd(benchmark::State& s) { Run(s, slimpack::runtime::kernels::int8dot::DotAvx2Madd); }
void BM_Portable(benchmark::State& s) { Run(s, nullptr); }
BENCHMARK(BM_Vnni512);
BENCHMARK(BM_AvxVnni);
BENCHMARK(BM_Avx2Madd);
BENCHMARK(BM_Portable);

}  // namespace

BENCHMARK_MAIN();
