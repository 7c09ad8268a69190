// A streaming histogram over a symmetric range [-R, R) whose range doubles
// when data falls outside it: adjacent bin pairs merge, so counts are kept
// exactly and memory stays fixed whatever the number of samples. R is a
// power of two, first chosen just above the first batch's largest |x|.
#ifndef SLIMPACK_CALIBRATION_HISTOGRAM_H_
#define SLIMPACK_CALIBRATION_HISTOGRAM_H_

#include <cstdint>
#include <vector>

namespace slimpack::calibration {

class Histogram {
 public:
  // `num_bins` must be a positive multiple of 4 (our invariant, CHECKed): the
  // doubling merge needs an even count and FoldAbs halves it.
  explicit Histogram(int num_bins = 4096);

  // Adds `n` finite values read `stride` floats apart. The batch's largest
  // |x| is found first, so one call re-bins at most once per doubling.
  void Add(const float* values, int64_t n, int64_t stride = 1);

  int num_bins() const { return static_cast<int>(counts_.size()); }
  // R (a power of two); 0 until a non-zero value has been seen.
  double half_range() const { return half_range_; }
  double bin_width() const { return 2 * half_range_ / counts_.size(); }
  const std::vector<uint64_t>& counts() const { return counts_; }
  uint64_t total() const { return total_; }

  // Counts of |x| over [0, R) in num_bins/2 bins of the same width.
  std::vector<uint64_t> FoldAbs() const;
  // Signed quantile q in [0, 1], interpolated linearly inside its bin.
  double Quantile(double q) const;

 private:
  void Grow(double max_abs);
  std::vector<uint64_t> counts_;
  double half_range_ = 0;
  uint64_t total_ = 0;
  uint64_t pending_zeros_ = 0;  // zeros seen while R == 0
};

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_HISTOGRAM_H_
