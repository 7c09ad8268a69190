// Single-thread throughput of ggml's block encoders (gguf::QuantizeRow, the
// code every `--quant <ggml type>` conversion spends most of its CPU in) on
// a fixed pseudo-random 1024 x 4096 f32 matrix of LLM-like weights: M
// weights/s per type (median and best of the repeats: this VM's noise), and an FNV-1a hash of the
// encoded bytes so that a change meant to be bit-exact can be checked to be.
//   ggml_encode_bench [repeats=5] [rows=1024] [types=q4_k,q5_k,q6_k,q2_k,q3_k,q4_0,q8_0] [lane_width]
// lane_width 16, 8 or 4 runs the K types' searches at that vector width
// (AVX-512, AVX2, SSE2/NEON) on a CPU that has a wider one.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf/ggml_blocks.h"
#include "formats/gguf/ggml_blocks_internal.h"
#include "formats/gguf/gguf_format.h"

namespace gg = slimpack::gguf;
using Clock = std::chrono::steady_clock;

namespace {

struct NamedType {
  const char* name;
  gg::TensorType type;
};
constexpr NamedType kTypes[] = {
    {"q4_k", gg::TensorType::kQ4_K}, {"q5_k", gg::TensorType::kQ5_K},
    {"q6_k", gg::TensorType::kQ6_K}, {"q2_k", gg::TensorType::kQ2_K},
    {"q3_k", gg::TensorType::kQ3_K}, {"q4_0", gg::TensorType::kQ4_0},
    {"q8_0", gg::TensorType::kQ8_0},
};

uint64_t Fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 1024;
  const std::string wanted = argc > 3 ? argv[3] : "q4_k,q5_k,q6_k,q2_k,q3_k,q4_0,q8_0";
  const int width = slimpack::gguf::internal::SetLaneWidth(argc > 4 ? std::atoi(argv[4]) : 0);
  std::printf("K-type searches %d floats wide\n", width);
  constexpr int64_t kCols = 4096;
  // Gaussian weights with a few large outliers per row, as trained layers have.
  std::vector<float> w(static_cast<size_t>(rows * kCols));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float& v : w) v = normal(rng);
  for (int64_t r = 0; r < rows; ++r) w[static_cast<size_t>(r * kCols + (r * 37) % kCols)] *= 40;
  std::printf("| type | M weights/s (1 thread), median | best | output hash |\n|---|---|---|---|\n");
  for (const NamedType& t : kTypes) {
    if (("," + wanted + ",").find(std::string(",") + t.name + ",") == std::string::npos) continue;
    const int64_t row_bytes = gg::RowBytes(t.type, kCols);
    std::vector<uint8_t> out(static_cast<size_t>(rows * row_bytes));
    std::vector<double> seconds;
    for (int k = 0; k < repeats; ++k) {
      const auto t0 = Clock::now();
      for (int64_t r = 0; r < rows; ++r) {
        const absl::Status s = gg::QuantizeRow(t.type, w.data() + r * kCols, kCols, nullptr,
                                               out.data() + r * row_bytes);
        if (!s.ok()) {
          std::fprintf(stderr, "%s\n", s.ToString().c_str());
          return 1;
        }
      }
      seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double weights = static_cast<double>(rows * kCols);
    std::printf("| %s | %.1f | %.1f | %016llx |\n", t.name, weights / seconds[seconds.size() / 2] / 1e6,
                weights / seconds[0] / 1e6, static_cast<unsigned long long>(Fnv1a(out)));
  }
  return 0;
}
