// Clip-threshold searches over |x| histograms: TensorRT-style entropy (KL)
// calibration and MSE-optimal clipping. Both return a threshold T; the
// calibrated range is the observed [min, max] clipped to [-T, T].
#ifndef SLIMPACK_CALIBRATION_RANGE_METHODS_H_
#define SLIMPACK_CALIBRATION_RANGE_METHODS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace slimpack::calibration {

// Entropy calibration (Migacz, "8-bit Inference with TensorRT", GTC 2017):
// for each candidate i >= levels bins, the reference P is abs_counts[0, i)
// with the outliers folded into its last bin; Q quantizes [0, i) into
// `levels` groups, spreading each group's mass over its non-empty bins.
// Returns i* x bin_width for the i minimising KL(P || Q) (smoothed so empty
// Q bins cost a finite amount). Candidates i are spaced evenly so that at
// most kMaxEntropyCandidates are tried (stride 1 up to levels + 512 bins). If the histogram has fewer than `levels`
// bins with data in range, returns the full range.
inline constexpr size_t kMaxEntropyCandidates = 512;
double EntropyThreshold(const std::vector<uint64_t>& abs_counts,
                        double bin_width, int levels);

// MSE-optimal symmetric clip for a uniform quantizer with `levels` steps on
// each side of zero (127 for int8): over thresholds T = j x bin_width,
// minimises count_in x step^2/12 + sum over clipped bins of (centre - T)^2,
// with step = T / levels. O(bins) with suffix sums.
double MseThreshold(const std::vector<uint64_t>& abs_counts, double bin_width,
                    int levels);

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_RANGE_METHODS_H_
