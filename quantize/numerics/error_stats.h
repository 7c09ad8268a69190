// Error statistics between a reference float array and its approximation
// (quantized weights, layer outputs). Accumulated in double, in order.
#ifndef SLIMPACK_QUANTIZE_NUMERICS_ERROR_STATS_H_
#define SLIMPACK_QUANTIZE_NUMERICS_ERROR_STATS_H_

#include <cstdint>

namespace slimpack::quant {

struct ErrorStats {
  double ref_sq = 0;    // sum ref^2
  double err_sq = 0;    // sum (ref - approx)^2
  double max_abs = 0;   // max |ref - approx|
  double relative_l2() const;  // sqrt(err_sq / ref_sq); 0 if both are 0
  double sqnr_db() const;      // 10 log10(ref_sq / err_sq); +inf if exact
};

ErrorStats CompareArrays(const float* ref, const float* approx, int64_t n);
// Continues `s` over n more elements, in order: comparing an array in
// consecutive pieces gives exactly CompareArrays' sums.
void AccumulateErrors(ErrorStats& s, const float* ref, const float* approx, int64_t n);

// ||ref - approx||_2 / ||ref||_2 (0 when both are zero, +inf when only
// ref is).
double RelativeL2(const float* ref, const float* approx, int64_t n);
// Signal-to-quantization-noise ratio in dB; +inf when identical.
double SqnrDb(const float* ref, const float* approx, int64_t n);
double MaxAbsDiff(const float* ref, const float* approx, int64_t n);

}  // namespace slimpack::quant

#endif  // SLIMPACK_QUANTIZE_NUMERICS_ERROR_STATS_H_
