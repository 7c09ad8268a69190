// Scalar reference RTN kernel: the definition the AVX2 kernel must match
// bit for bit (same operations, same summation order).
#include <cmath>

#include "quantize/numerics/rtn_kernel.h"
#include "quantize/numerics/rtn_kernel_impl.h"

namespace slimpack::quant::internal {
namespace {

inline float ElementError(float x, const GroupGrid& g) {
  const float d = x - DequantizeCode(QuantizeValue(x, g), g);
  return d * d;
}

struct ScalarOps {
  static constexpr bool kGrids8 = false;
  static bool MinMax(const float* x, int64_t n, float* mn, float* mx) {
    float lo = x[0], hi = x[0];
    float poison = 0.0f;  // x * 0 is NaN exactly for inf/NaN
    for (int64_t i = 0; i < n; ++i) {
      lo = x[i] < lo ? x[i] : lo;
      hi = x[i] > hi ? x[i] : hi;
      poison += x[i] * 0.0f;
    }
    *mn = lo;
    *mx = hi;
    return poison == 0.0f;
  }
  static float Error(const float* x, const float* imp, int64_t n,
                     const GroupGrid& g) {
    return GroupErrorScalar(x, imp, n, g);
  }
  static void Quantize(const float* x, int64_t n, const GroupGrid& g,
                       int8_t* q) {
    for (int64_t i = 0; i < n; ++i) {
      q[i] = static_cast<int8_t>(QuantizeValue(x[i], g));
    }
  }
};

}  // namespace

float GroupErrorScalar(const float* x, const float* imp, int64_t n,
                       const GroupGrid& g) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int64_t n8 = n - n % 8;
  for (int64_t i = 0; i < n8; ++i) {
    float e = ElementError(x[i], g);
    if (imp) e = e * imp[i];
    acc[i % 8] += e;
  }
  float s = ReduceLanes(acc);
  for (int64_t i = n8; i < n; ++i) {
    float e = ElementError(x[i], g);
    if (imp) e = e * imp[i];
    s += e;
  }
  return s;
}

bool QuantizeRowScalar(const RowJob& job) {
  return QuantizeRowImpl<ScalarOps>(job);
}

}  // namespace slimpack::quant::internal
