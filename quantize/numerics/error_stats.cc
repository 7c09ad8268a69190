// Error statistics in double.
#include "quantize/numerics/error_stats.h"
#include "support/portable_math.h"

#include <cmath>
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

void AccumulateErrors(ErrorStats& s, const float* ref, const float* approx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double r = ref[i];
    const double d = r - static_cast<double>(approx[i]);
    s.ref_sq += r * r;
    s.err_sq += d * d;
    if (std::fabs(d) > s.max_abs) s.max_abs = std::fabs(d);
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
