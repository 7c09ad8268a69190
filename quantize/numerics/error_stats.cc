// Error statistics in double.
#include "quantize/numerics/error_stats.h"
#include "support/portable_math.h"
#include "support/simd_clones.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace slimpack::quant {

double ErrorStats::relative_l2() const {
  if (err_sq == 0) return 0;
  if (ref_sq == 0) return std::numeric_limits<double>::infinity();
  return std::sqrt(err_sq / ref_sq);
}

double ErrorStats::sqnr_db() const {
  if (err_sq == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * pmath::Log10(ref_sq / err_sq);
}

ErrorStats CompareArrays(const float* ref, const float* approx, int64_t n) {
  ErrorStats s;
  AccumulateErrors(s, ref, approx, n);
  return s;
}

namespace {

typedef float V8f __attribute__((vector_size(32), aligned(4)));
typedef double V8d __attribute__((vector_size(64), aligned(8)));
typedef int64_t V8l __attribute__((vector_size(64)));

// Whole rounds of eight elements, lane k holding element 8i + k: every lane
// adds in the order the scalar loop below would, so the AVX-512 clone (one
// register), the AVX2 one (two), the baseline (four) and plain doubles give
// the same bits.
SLIMPACK_SIMD_CLONES_512
void Rounds(const float* ref, const float* approx, int64_t rounds, double* rl, double* el,
            double* ml) {
  V8d r, e, m;
  std::memcpy(&r, rl, sizeof r);
  std::memcpy(&e, el, sizeof e);
  std::memcpy(&m, ml, sizeof m);
  for (int64_t i = 0; i < rounds * 8; i += 8) {
    V8f rf, af;
    std::memcpy(&rf, ref + i, sizeof rf);
    std::memcpy(&af, approx + i, sizeof af);
    const V8d x = __builtin_convertvector(rf, V8d);
    const V8d d = x - __builtin_convertvector(af, V8d);
    r += x * x;
    e += d * d;
    const V8d ad = reinterpret_cast<V8d>(reinterpret_cast<V8l>(d) & 0x7FFFFFFFFFFFFFFF);
    m = m < ad ? ad : m;  // std::max(m, |d|): a NaN difference leaves m
  }
  std::memcpy(rl, &r, sizeof r);
  std::memcpy(el, &e, sizeof e);
  std::memcpy(ml, &m, sizeof m);
}

}  // namespace

void AccumulateErrors(ErrorStats& s, const float* ref, const float* approx, int64_t n) {
  constexpr int kLanes = ErrorStats::kLanes;
  static_assert(kLanes == 8, "Rounds() holds eight lanes");
  double rl[kLanes], el[kLanes], ml[kLanes];
  for (int k = 0; k < kLanes; ++k) {
    rl[k] = s.ref_lanes[k];
    el[k] = s.err_lanes[k];
    ml[k] = s.max_abs;
  }
  auto one = [&](int lane, int64_t i) {
    const double r = ref[i];
    const double d = r - static_cast<double>(approx[i]);
    rl[lane] += r * r;
    el[lane] += d * d;
    ml[lane] = std::max(ml[lane], std::fabs(d));
  };
  int64_t i = 0;
  // Up to the next multiple of kLanes of the whole array, whole rounds,
  // then the rest.
  for (; i < n && (s.count + i) % kLanes != 0; ++i) one(static_cast<int>((s.count + i) % kLanes), i);
  const int64_t rounds = (n - i) / kLanes;
  Rounds(ref + i, approx + i, rounds, rl, el, ml);
  i += rounds * kLanes;
  for (; i < n; ++i) one(static_cast<int>((s.count + i) % kLanes), i);
  s.count += n;
  for (int k = 0; k < kLanes; ++k) s.max_abs = std::max(s.max_abs, ml[k]);
  s.ref_sq = 0;
  s.err_sq = 0;
  for (int k = 0; k < kLanes; ++k) {
    s.ref_lanes[k] = rl[k];
    s.err_lanes[k] = el[k];
    s.ref_sq += rl[k];
    s.err_sq += el[k];
  }
}

double RelativeL2(const float* ref, const float* approx, int64_t n) {
  return CompareArrays(ref, approx, n).relative_l2();
}
double SqnrDb(const float* ref, const float* approx, int64_t n) {
  return CompareArrays(ref, approx, n).sqnr_db();
}
double MaxAbsDiff(const float* ref, const float* approx, int64_t n) {
  return CompareArrays(ref, approx, n).max_abs;
}

}  // namespace slimpack::quant
