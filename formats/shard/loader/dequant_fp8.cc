// fp8_e4m3_groupwise decoding (spec.md, "fp8_e4m3_groupwise"): each byte is
// an OCP E4M3FN float, looked up in a 256-entry f32 table computed once from
// the spec's formula, then multiplied by its group's scale.
//
// There is no vector kernel (AVX2 / NEON): each element is a table lookup,
// which does not vectorise without gathers, and one multiply. Every
// DequantImpl runs this one scalar loop, so kBest equals kScalar bit for bit
// by construction rather than by testing.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "formats/shard/loader/dequant_kernels.h"
#include "formats/shard/loader/dequantize.h"

namespace slimpack::loader {
namespace {

// f(q) for every code. Each value is exact in f32 (at most 4 significant
// bits, exponents -9..8), so the table holds the spec's values, not
// roundings of them.
std::array<float, 256> MakeFp8E4M3Table() {
  std::array<float, 256> table{};
  for (int q = 0; q < 256; ++q) {
    const bool negative = (q & 0x80) != 0;
    const int e = (q >> 3) & 0x0F;
    const int m = q & 0x07;
    float v;
    if (e == 15 && m == 7) {
      v = std::numeric_limits<float>::quiet_NaN();  // 0x7F, 0xFF; no infinities
    } else if (e == 0) {
      v = std::ldexp(static_cast<float>(m) / 8.0f, -6);  // zero and subnormals
    } else {
      v = std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
    }
    // Negating keeps the sign on zero (0x80 is -0) and on NaN (0xFF).
    table[static_cast<size_t>(q)] = negative ? -v : v;
  }
  return table;
}

const std::array<float, 256>& Fp8E4M3Table() {
  static const std::array<float, 256> table = MakeFp8E4M3Table();
  return table;
}

}  // namespace

float Fp8E4M3ToFloat(uint8_t q) { return Fp8E4M3Table()[q]; }

void internal::DequantFp8E4M3Groups(const uint8_t* q, const float* scale, uint64_t outer,
                                    uint64_t axis, uint64_t inner, uint64_t group_size,
                                    uint64_t block_rows, float* out) {
  const std::array<float, 256>& f = Fp8E4M3Table();
  const uint64_t groups = axis / group_size + (axis % group_size != 0);
  for (uint64_t o = 0; o < outer; ++o) {
    for (uint64_t g = 0; g < groups; ++g) {
      // The inner scales of group g: one per element of a row along inner.
      const float* s = scale + ((o / block_rows) * groups + g) * inner;
      const uint64_t a_end = std::min(axis, (g + 1) * group_size);
      for (uint64_t a = g * group_size; a < a_end; ++a) {
        const uint64_t start = (o * axis + a) * inner;
        for (uint64_t i = 0; i < inner; ++i) out[start + i] = f[q[start + i]] * s[i];
      }
    }
  }
}

}  // namespace slimpack::loader
