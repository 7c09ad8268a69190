// Streaming range statistics of one activation tensor, per tensor and
// optionally per channel: min/max, moving-average min/max, a re-binning
// histogram, and the calibrated range under the chosen method.
#ifndef SLIMPACK_CALIBRATION_TENSOR_OBSERVER_H_
#define SLIMPACK_CALIBRATION_TENSOR_OBSERVER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "calibration/histogram.h"
#include "runtime/rt_tensor.h"

namespace slimpack::calibration {

enum class RangeMethod { kMinMax, kMovingMinMax, kPercentile, kEntropy, kMse };

// "minmax", "moving_minmax", "percentile", "entropy", "mse".
const char* RangeMethodName(RangeMethod m);
// InvalidArgument listing the supported names.
absl::StatusOr<RangeMethod> RangeMethodFromName(const std::string& name);

struct ObserverOptions {
  RangeMethod method = RangeMethod::kMinMax;
  bool per_channel = false;
  // Channel axis for per-channel ranges; -1 = auto: axis 1 for rank 4/5
  // (NCHW / NCDHW), else the last axis (rank 3 is taken as [B, T, C]).
  int channel_axis = -1;
  int num_bins = 4096;           // signed bins; |x| histograms get half
  double percentile = 99.99;     // kPercentile: keeps [100-p, p] quantiles
  int entropy_levels = 128;      // kEntropy: quantized |x| levels (int8)
  int mse_levels = 127;          // kMse: steps per side (int8 symmetric)
  double averaging_constant = 0.01;  // kMovingMinMax, as PyTorch's default
};

struct HistogramSummary {
  int bins = 0;
  double half_range = 0;
  double p50_abs = 0, p99_abs = 0, p999_abs = 0, p9999_abs = 0;
  double near_zero_fraction = 0;
};

struct ObservedRange {
  uint64_t elements = 0;   // finite values seen
  uint64_t nonfinite = 0;  // NaN/Inf, excluded from every statistic
  int64_t runs = 0;        // Observe calls
  double min = 0, max = 0;
  double lo = 0, hi = 0;   // calibrated range
  HistogramSummary histogram;
  int channel_axis = -1;   // resolved axis when per-channel
  std::vector<std::pair<double, double>> channel_ranges;
  std::vector<int64_t> last_dims;
};

class TensorObserver {
 public:
  explicit TensorObserver(const ObserverOptions& options);
  // Folds in one run's f32 tensor. InvalidArgument naming the tensor when
  // its channel count changes between runs under per-channel.
  absl::Status Observe(const std::string& name, const runtime::RtTensor& tensor);
  ObservedRange Finish() const;

 private:
  struct Channel {
    explicit Channel(int bins) : hist(bins) {}
    double min = 0, max = 0;
    double ema_min = 0, ema_max = 0;
    bool seen = false;
    Histogram hist;
    void Add(const std::vector<float>& finite, double averaging_constant);
    std::pair<double, double> Range(const ObserverOptions& o) const;
  };
  ObserverOptions options_;
  Channel whole_;
  std::vector<Channel> channels_;
  int axis_ = -1;
  uint64_t nonfinite_ = 0;
  int64_t runs_ = 0;
  std::vector<int64_t> last_dims_;
  std::vector<float> scratch_;  // reused: bounded by the largest tensor
};

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_TENSOR_OBSERVER_H_
