// Per-tensor / per-channel range observation. Values are gathered into a
// scratch buffer (finite only) before statistics, so NaN/Inf never reach the
// histogram and every accumulation runs in element order.
#include "calibration/tensor_observer.h"

#include <algorithm>
#include <cmath>

#include "calibration/range_methods.h"

namespace slimpack::calibration {

const char* RangeMethodName(RangeMethod m) {
  switch (m) {
    case RangeMethod::kMinMax: return "minmax";
    case RangeMethod::kMovingMinMax: return "moving_minmax";
    case RangeMethod::kPercentile: return "percentile";
    case RangeMethod::kEntropy: return "entropy";
    case RangeMethod::kMse: return "mse";
  }
  return "?";
}

absl::StatusOr<RangeMethod> RangeMethodFromName(const std::string& name) {
  for (RangeMethod m : {RangeMethod::kMinMax, RangeMethod::kMovingMinMax,
                        RangeMethod::kPercentile, RangeMethod::kEntropy,
                        RangeMethod::kMse}) {
    if (name == RangeMethodName(m)) return m;
  }
  return absl::InvalidArgumentError(
      "unknown calibration method '" + name +
      "' (supported: minmax, moving_minmax, percentile, entropy, mse)");
}

namespace {

bool UsesHistogram(RangeMethod m) {
  return m == RangeMethod::kPercentile || m == RangeMethod::kEntropy ||
         m == RangeMethod::kMse;
}

int ResolveAxis(int requested, size_t rank) {
  if (rank == 0) return -1;
  if (requested >= 0) return requested < static_cast<int>(rank) ? requested : -1;
  if (rank == 4 || rank == 5) return 1;
  return static_cast<int>(rank) - 1;
}

}  // namespace

TensorObserver::TensorObserver(const ObserverOptions& options)
    : options_(options), whole_(options.num_bins) {}

void TensorObserver::Channel::Add(const std::vector<float>& finite,
                                  double averaging_constant) {
  if (finite.empty()) return;
  double lo = finite[0], hi = finite[0];
  for (float v : finite) {
    lo = std::min<double>(lo, v);
    hi = std::max<double>(hi, v);
  }
  if (!seen) {
    min = lo, max = hi, ema_min = lo, ema_max = hi;
    seen = true;
  } else {
    min = std::min(min, lo);
    max = std::max(max, hi);
    ema_min += averaging_constant * (lo - ema_min);
    ema_max += averaging_constant * (hi - ema_max);
  }
  hist.Add(finite.data(), static_cast<int64_t>(finite.size()));
}

std::pair<double, double> TensorObserver::Channel::Range(
    const ObserverOptions& o) const {
  if (!seen) return {0, 0};
  switch (o.method) {
    case RangeMethod::kMinMax:
      return {min, max};
    case RangeMethod::kMovingMinMax:
      return {ema_min, ema_max};
    case RangeMethod::kPercentile: {
      const double p = o.percentile / 100;
      return {std::max(min, hist.Quantile(1 - p)),
              std::min(max, hist.Quantile(p))};
    }
    case RangeMethod::kEntropy:
    case RangeMethod::kMse: {
      const std::vector<uint64_t> abs = hist.FoldAbs();
      const double t =
          o.method == RangeMethod::kEntropy
              ? EntropyThreshold(abs, hist.bin_width(), o.entropy_levels)
              : MseThreshold(abs, hist.bin_width(), o.mse_levels);
      return {std::max(min, -t), std::min(max, t)};
    }
  }
  return {min, max};
}

absl::Status TensorObserver::Observe(const std::string& name,
                                     const runtime::RtTensor& tensor) {
  if (tensor.dtype() != ir::DType::kF32) return absl::OkStatus();
  ++runs_;
  last_dims_ = tensor.dims();
  const float* data = tensor.data<float>();
  const int64_t n = tensor.num_elements();
  scratch_.clear();
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(data[i])) {
      scratch_.push_back(data[i]);
    } else {
      ++nonfinite_;
    }
  }
  whole_.Add(scratch_, options_.averaging_constant);
  if (!options_.per_channel) return absl::OkStatus();

  const int axis = ResolveAxis(options_.channel_axis, tensor.rank());
  if (axis < 0) return absl::OkStatus();  // scalars: per-tensor only
  const int64_t c_count = tensor.dim(axis);
  if (channels_.empty()) {
    axis_ = axis;
    const int bins = UsesHistogram(options_.method) ? options_.num_bins : 4;
    channels_.assign(static_cast<size_t>(c_count), Channel(bins));
  } else if (axis != axis_ || c_count != static_cast<int64_t>(channels_.size())) {
    return absl::InvalidArgumentError(
        "tensor '" + name + "': per-channel axis " + std::to_string(axis) +
        " has " + std::to_string(c_count) + " channels, earlier runs had " +
        std::to_string(channels_.size()) + " on axis " + std::to_string(axis_));
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= tensor.dim(d);
  for (size_t d = axis + 1; d < tensor.rank(); ++d) inner *= tensor.dim(d);
  std::vector<float> values;
  for (int64_t c = 0; c < c_count; ++c) {
    values.clear();
    for (int64_t o = 0; o < outer; ++o) {
      const float* block = data + (o * c_count + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        if (std::isfinite(block[i])) values.push_back(block[i]);
      }
    }
    channels_[c].Add(values, options_.averaging_constant);
  }
  return absl::OkStatus();
}

ObservedRange TensorObserver::Finish() const {
  ObservedRange r;
  r.elements = whole_.hist.total();
  r.nonfinite = nonfinite_;
  r.runs = runs_;
  r.last_dims = last_dims_;
  if (whole_.seen) {
    r.min = whole_.min;
    r.max = whole_.max;
  }
  std::tie(r.lo, r.hi) = whole_.Range(options_);
  const Histogram& h = whole_.hist;
  r.histogram.bins = h.num_bins();
  r.histogram.half_range = h.half_range();
  // Quantiles of |x| from the folded histogram, at bin upper edges.
  const std::vector<uint64_t> abs = h.FoldAbs();
  const double total = static_cast<double>(h.total());
  auto abs_quantile = [&](double q) {
    double cum = 0;
    for (size_t j = 0; j < abs.size(); ++j) {
      cum += abs[j];
      if (cum >= q * total) return (j + 1) * h.bin_width();
    }
    return h.half_range();
  };
  if (total > 0) {
    r.histogram.p50_abs = abs_quantile(0.5);
    r.histogram.p99_abs = abs_quantile(0.99);
    r.histogram.p999_abs = abs_quantile(0.999);
    r.histogram.p9999_abs = abs_quantile(0.9999);
  }
  if (h.half_range() == 0 && total > 0) {
    r.histogram.near_zero_fraction = 1;
  } else if (total > 0) {
    // Fraction with |x| < one bin width.
    r.histogram.near_zero_fraction = abs[0] / total;
  }
  if (!channels_.empty()) {
    r.channel_axis = axis_;
    for (const Channel& c : channels_) r.channel_ranges.push_back(c.Range(options_));
  }
  return r;
}

}  // namespace slimpack::calibration
