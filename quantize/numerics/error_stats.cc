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

typedef float V4f __attribute__((vector_size(16), aligned(4)));
typedef int64_t V4l __attribute__((vector_size(32)));
using support::V4d;

// Whole rounds of eight elements: lanes 0-3 and 4-7 in two vectors each,
// every lane adding in the order the scalar loop below would (so an AVX2
// clone, two SSE2 registers or plain doubles give the same bits).
SLIMPACK_SIMD_CLONES
void Rounds(const float* ref, const float* approx, int64_t rounds, double* rl, double* el,
            double* ml) {
  V4d r_lo = support::LoadV4(rl), r_hi = support::LoadV4(rl + 4);
  V4d e_lo = support::LoadV4(el), e_hi = support::LoadV4(el + 4);
  V4d m_lo = support::LoadV4(ml), m_hi = support::LoadV4(ml + 4);
  auto step = [](V4f rf, V4f af, V4d& r, V4d& e, V4d& m) __attribute__((always_inline)) {
    const V4d x = __builtin_convertvector(rf, V4d);
    const V4d d = x - __builtin_convertvector(af, V4d);
    r += x * x;
    e += d * d;
    const V4d ad = reinterpret_cast<V4d>(reinterpret_cast<V4l>(d) & 0x7FFFFFFFFFFFFFFF);
    m = m < ad ? ad : m;  // std::max(m, |d|): a NaN difference leaves m
  };
  for (int64_t i = 0; i < rounds * 8; i += 8) {
    V4f r0, r1, a0, a1;
    std::memcpy(&r0, ref + i, sizeof r0);
    std::memcpy(&r1, ref + i + 4, sizeof r1);
    std::memcpy(&a0, approx + i, sizeof a0);
    std::memcpy(&a1, approx + i + 4, sizeof a1);
    step(r0, a0, r_lo, e_lo, m_lo);
    step(r1, a1, r_hi, e_hi, m_hi);
  }
  support::StoreV4(rl, r_lo);
  support::StoreV4(rl + 4, r_hi);
  support::StoreV4(el, e_lo);
  support::StoreV4(el + 4, e_hi);
  support::StoreV4(ml, m_lo);
  support::StoreV4(ml + 4, m_hi);
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
