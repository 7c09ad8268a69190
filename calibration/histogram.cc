// Histogram re-binning: R only ever doubles, so every old bin lies inside one
// new bin and no count is split or estimated.
#include "calibration/histogram.h"

#include <algorithm>
#include <cmath>

#include "support/check.h"

namespace slimpack::calibration {

Histogram::Histogram(int num_bins) : counts_(num_bins, 0) {
  CHECK(num_bins > 0 && num_bins % 4 == 0);
}

void Histogram::Grow(double max_abs) {
  if (half_range_ == 0) {
    // The smallest power of two above max_abs: every value is strictly
    // inside the range (no clamping into the top bin, which would break
    // exact merging) and bin edges are dyadic.
    half_range_ = std::ldexp(1.0, std::ilogb(max_abs) + 1);
    // Zeros seen before any range existed go to the bin holding 0.
    counts_[counts_.size() / 2] += pending_zeros_;
    pending_zeros_ = 0;
    return;
  }
  const size_t n = counts_.size();
  while (max_abs >= half_range_) {
    // Old bins 2i, 2i+1 -> new bin n/4 + i: the old range is the middle half.
    std::vector<uint64_t> merged(n, 0);
    for (size_t i = 0; i < n / 2; ++i) {
      merged[n / 4 + i] = counts_[2 * i] + counts_[2 * i + 1];
    }
    counts_.swap(merged);
    half_range_ *= 2;
  }
}

void Histogram::Add(const float* values, int64_t n, int64_t stride) {
  double max_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(values[i * stride])));
  }
  if (max_abs >= half_range_ && max_abs > 0) Grow(max_abs);
  total_ += static_cast<uint64_t>(n);
  if (half_range_ == 0) {
    pending_zeros_ += static_cast<uint64_t>(n);
    return;
  }
  const int64_t bins = static_cast<int64_t>(counts_.size());
  const double scale = bins / (2 * half_range_);
  for (int64_t i = 0; i < n; ++i) {
    const double x = values[i * stride];
    int64_t b = static_cast<int64_t>((x + half_range_) * scale);
    b = std::clamp<int64_t>(b, 0, bins - 1);
    ++counts_[b];
  }
}

std::vector<uint64_t> Histogram::FoldAbs() const {
  const size_t half = counts_.size() / 2;
  std::vector<uint64_t> out(half, 0);
  for (size_t j = 0; j < half; ++j) {
    out[j] = counts_[half + j] + counts_[half - 1 - j];
  }
  out[0] += pending_zeros_;
  return out;
}

double Histogram::Quantile(double q) const {
  if (total_ == 0 || half_range_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double target = q * static_cast<double>(total_);
  const double w = bin_width();
  double cum = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    const double c = static_cast<double>(counts_[i]);
    if (c > 0 && cum + c >= target) {
      const double frac = (target - cum) / c;
      return -half_range_ + (static_cast<double>(i) + frac) * w;
    }
    cum += c;
  }
  return half_range_;
}

}  // namespace slimpack::calibration
