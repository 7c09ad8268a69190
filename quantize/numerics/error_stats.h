// Error statistics between a reference float array and its approximation
// (quantized weights, layer outputs). Accumulated in double, in a fixed
// order: element i of the whole array goes to partial sum i mod 8, and the
// eight partials are added in order (eight chains: one dependent chain of
// double adds made this a tenth of an int4 conversion's time).
#ifndef SLIMPACK_QUANTIZE_NUMERICS_ERROR_STATS_H_
#define SLIMPACK_QUANTIZE_NUMERICS_ERROR_STATS_H_

#include <cstdint>

namespace slimpack::quant {

struct ErrorStats {
  static constexpr int kLanes = 8;
  double ref_sq = 0;    // sum ref^2
  double err_sq = 0;    // sum (ref - approx)^2
  double max_abs = 0;   // max |ref - approx|
  // ref_sq and err_sq are the totals of these partial sums, recomputed
  // by every AccumulateErrors (set them through it, not by hand); `count`
  // is how many elements were accumulated (which partial the next joins).
  double ref_lanes[kLanes] = {};
  double err_lanes[kLanes] = {};
  int64_t count = 0;
  double relative_l2() const;  // sqrt(err_sq / ref_sq); 0 if both are 0
  double sqnr_db() const;      // 10 log10(ref_sq / err_sq); +inf if exact
};

ErrorStats CompareArrays(const float* ref, const float* approx, int64_t n);
// Continues `s` over n more elements: comparing an array in consecutive
// pieces of any sizes gives exactly CompareArrays' sums.
void AccumulateErrors(ErrorStats& s, const float* ref, const float* approx, int64_t n);

// ||ref - approx||_2 / ||ref||_2 (0 when both are zero, +inf when only
// ref is).
double RelativeL2(const float* ref, const float* approx, int64_t n);
// Signal-to-quantization-noise ratio in dB; +inf when identical.
double SqnrDb(const float* ref, const float* approx, int64_t n);
double MaxAbsDiff(const float* ref, const float* approx, int64_t n);

}  // namespace slimpack::quant

#endif  // SLIMPACK_QUANTIZE_NUMERICS_ERROR_STATS_H_
