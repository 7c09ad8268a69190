// The two direct convolution kernels side by side on the layer shapes of the
// latency benchmark's models (scripts/ort_latency.sh): DirectConv2D
// (positions in the lanes, conv_direct.h) and BlockedConv2D (output channels
// in the lanes, weights packed once, conv_blocked.h). One thread; reports
// GMAC/s. BlockedConv2DPreferred's threshold comes from these figures.
// MobileNet's depthwise layers run through BM_Direct (DirectConv2D hands
// them to the channels-in-lanes kernel, conv_depthwise.h).
//   BUILD/bench/conv_blocked_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <algorithm>
#include <iterator>
#include <memory>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "runtime/kernels/conv_blocked.h"
#include "runtime/kernels/conv_direct.h"

namespace slimpack::runtime::kernels {
namespace {

struct Layer {
  const char* name;
  int64_t channels, size, out_channels, kernel, stride, pad;
  int64_t group = 1;
};

// Half-width ResNet-18 and MobileNetV3-style layers (bench/ort models).
constexpr Layer kLayers[] = {
    {"resnet_stem_7x7_s2", 3, 224, 32, 7, 2, 3},
    {"resnet_l1_3x3_56", 32, 56, 32, 3, 1, 1},
    {"resnet_l2_3x3_s2", 32, 56, 64, 3, 2, 1},
    {"resnet_l2_3x3_28", 64, 28, 64, 3, 1, 1},
    {"resnet_l2_1x1_s2", 32, 56, 64, 1, 2, 0},
    {"resnet_l3_3x3_14", 128, 14, 128, 3, 1, 1},
    {"resnet_l4_3x3_s2", 128, 14, 256, 3, 2, 1},
    {"resnet_l4_3x3_7", 256, 7, 256, 3, 1, 1},
    {"mobilenet_1x1_16_to_72_56", 16, 56, 72, 1, 1, 0},
    {"mobilenet_1x1_72_to_24_28", 72, 28, 24, 1, 1, 0},
    {"mobilenet_1x1_24_to_96_28", 24, 28, 96, 1, 1, 0},
    {"mobilenet_1x1_96_to_40_14", 96, 14, 40, 1, 1, 0},
    {"mobilenet_1x1_40_to_240_14", 40, 14, 240, 1, 1, 0},
    {"mobilenet_1x1_120_to_48_14", 120, 14, 48, 1, 1, 0},
    {"mobilenet_1x1_240_to_40_14", 240, 14, 40, 1, 1, 0},
    {"mobilenet_1x1_96_to_576_7", 96, 7, 576, 1, 1, 0},
    {"mobilenet_1x1_288_to_96_7", 288, 7, 96, 1, 1, 0},
    {"mobilenet_1x1_576_to_96_7", 576, 7, 96, 1, 1, 0},
    {"mobilenet_stem_3x3_s2", 3, 224, 16, 3, 2, 1},
    // Depthwise (group = channels): DirectConv2D hands these to
    // DepthwiseConv2D (conv_depthwise.h); the blocked kernel refuses them.
    {"mobilenet_dw3x3_s2_112", 16, 112, 16, 3, 2, 1, 16},
    {"mobilenet_dw3x3_s2_56", 72, 56, 72, 3, 2, 1, 72},
    {"mobilenet_dw3x3_28", 88, 28, 88, 3, 1, 1, 88},
    {"mobilenet_dw5x5_s2_28", 96, 28, 96, 5, 2, 2, 96},
    {"mobilenet_dw5x5_14", 240, 14, 240, 5, 1, 2, 240},
    {"mobilenet_dw5x5_s2_14", 288, 14, 288, 5, 2, 2, 288},
    {"mobilenet_dw5x5_7", 576, 7, 576, 5, 1, 2, 576},
};

Conv2DShape ShapeOf(const Layer& l) {
  Conv2DShape s;
  s.channels = l.channels;
  s.height = s.width = l.size;
  s.out_channels = l.out_channels;
  s.kernel_h = s.kernel_w = l.kernel;
  s.stride_h = s.stride_w = l.stride;
  s.pad_top = s.pad_left = l.pad;
  s.group = l.group;
  s.out_h = s.out_w = (l.size + 2 * l.pad - l.kernel) / l.stride + 1;
  return s;
}

std::vector<float> Random(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

void Run(benchmark::State& state, bool blocked) {
  const Layer& layer = kLayers[state.range(0)];
  const Conv2DShape s = ShapeOf(layer);
  state.SetLabel(layer.name);
  if (!DirectConv2DSupported(s) || (blocked && !BlockedConv2DSupported(s))) {
    state.SkipWithError("kernel not supported on this CPU or shape");
    return;
  }
  const std::vector<float> x = Random(s.channels * s.height * s.width, 1);
  const std::vector<float> w =
      Random(s.out_channels * s.channels / s.group * s.kernel_h * s.kernel_w, 2);
  const std::vector<float> bias = Random(s.out_channels, 3);
  std::vector<float> y(s.out_channels * s.out_h * s.out_w);
  const std::shared_ptr<const BlockedConvWeights> packed =
      blocked ? PackBlockedConvWeights(s, w.data()) : nullptr;
  std::vector<float> scratch(
      std::max(DirectConv2DScratchFloats(s), BlockedConv2DScratchFloats(s)) + 1);
  for (auto _ : state) {
    if (blocked) {
      BlockedConv2D(s, x.data(), *packed, bias.data(), y.data(), scratch.data(), nullptr);
    } else {
      DirectConv2D(s, x.data(), w.data(), bias.data(), y.data(), scratch.data(), nullptr);
    }
    benchmark::DoNotOptimize(y.data());
  }
  const double macs =
      static_cast<double>(y.size()) * s.channels / s.group * s.kernel_h * s.kernel_w;
  state.counters["GMAC/s"] =
      benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Direct(benchmark::State& state) { Run(state, false); }
void BM_Blocked(benchmark::State& state) { Run(state, true); }

BENCHMARK(BM_Direct)->DenseRange(0, std::size(kLayers) - 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Blocked)->DenseRange(0, std::size(kLayers) - 1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace slimpack::runtime::kernels

BENCHMARK_MAIN();
