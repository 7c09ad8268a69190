// Error metrics of the accuracy-diff report: tensor-level (SQNR, cosine,
// relative L2, max abs, range overflow), next-token statistics for language
// models (KL divergence, top-1 agreement, Δp, perplexity; the statistics
// llama.cpp's perplexity tool prints with --kl-divergence) and classifier
// agreement. Every accumulator streams: values are added one batch at a
// time and sums are kept in double, so results do not depend on batching
// beyond floating-point summation order (which is fixed: sample order).
#ifndef SLIMPACK_REPORT_METRICS_H_
#define SLIMPACK_REPORT_METRICS_H_

#include <cstdint>
#include <limits>
#include <vector>

namespace slimpack::report {

// Error of a candidate tensor against a reference, accumulated over calls.
//   SQNR (dB)   = 10 log10(sum ref^2 / sum (cand-ref)^2)   (+inf when equal)
//   cosine      = sum ref*cand / sqrt(sum ref^2 * sum cand^2)
//   relative L2 = sqrt(sum (cand-ref)^2 / sum ref^2)
//   max abs     = max |cand-ref|
// Non-finite pairs are counted and left out of the sums.
class TensorErrorStats {
 public:
  void Add(const float* ref, const float* cand, int64_t n);
  // Counts reference values outside [lo, hi] (the calibrated range the
  // candidate's quantizer clips to) from now on.
  void SetClipRange(float lo, float hi);

  int64_t count() const { return count_; }
  int64_t nonfinite() const { return nonfinite_; }
  double Sqnr() const;
  double Cosine() const;
  double RelativeL2() const;
  double MaxAbs() const { return max_abs_; }
  double RefMin() const { return ref_min_; }
  double RefMax() const { return ref_max_; }
  bool has_clip_range() const { return has_clip_; }
  float clip_lo() const { return clip_lo_; }
  float clip_hi() const { return clip_hi_; }
  // Fraction of reference values outside the clip range (0 without one).
  double OverflowRate() const;

 private:
  int64_t count_ = 0;
  int64_t nonfinite_ = 0;
  int64_t overflow_ = 0;
  double sum_ref_sq_ = 0, sum_cand_sq_ = 0, sum_err_sq_ = 0, dot_ = 0;
  double max_abs_ = 0;
  double ref_min_ = std::numeric_limits<double>::infinity();
  double ref_max_ = -std::numeric_limits<double>::infinity();
  bool has_clip_ = false;
  float clip_lo_ = 0, clip_hi_ = 0;
};

// Value at `fraction` (0..1) of `sorted` (ascending) by linear
// interpolation between ranks: p = fraction*(n-1), the definition
// llama.cpp's perplexity tool uses. 0 for an empty vector.
double Percentile(const std::vector<double>& sorted, double fraction);

// Next-token statistics of an LM over scored positions. For each scored
// position t (predicting token t+1 of the window):
//   KLD_t = sum_v P_ref(v) (log P_ref(v) - log P_cand(v))   (nats)
//   dp_t  = P_cand(next) - P_ref(next)                      (fraction)
//   top-1 agreement: argmax ref == argmax cand
// with log-softmax in double. Positions follow the pinned perplexity
// protocol (eval/perplexity.h): each window scored on its last
// W-1 positions. Per-position KLD and dp are kept for percentiles: memory
// is 16 bytes per scored token, independent of the vocabulary.
class NextTokenStats {
 public:
  // `ref`, `cand`: logits [window, vocab]; `ids`: the window's tokens, each
  // in [0, vocab) (the caller's check: BuildReport validates them).
  void AddWindow(const float* ref, const float* cand, const int64_t* ids, int64_t window,
                 int64_t vocab);

  struct Summary {
    int64_t tokens = 0;
    double mean_kld = 0;
    double kld_stderr = 0;  // standard error of the mean
    // max, 99.9, 99, 95, 90, median, 10, 5, 1, 0.1, min (llama.cpp's rows).
    std::vector<std::pair<double, double>> kld_percentiles;
    double top1_agreement = 0;  // fraction of positions
    double mean_dp = 0;
    double rms_dp = 0;
    // max, 99.9, 99, 95, 90, 75, median, 25, 10, 5, 1, 0.1, min.
    std::vector<std::pair<double, double>> dp_percentiles;
    double ppl_ref = 0, ppl_cand = 0;
    double ppl_delta = 0;  // ppl_cand - ppl_ref
    double ppl_ratio = 0;  // ppl_cand / ppl_ref
  };
  Summary Summarize() const;

 private:
  std::vector<double> kld_, dp_;
  int64_t same_top_ = 0;
  double nll_ref_ = 0, nll_cand_ = 0;
};

// Classifier outputs [batch, classes]: top-1 agreement, and accuracy of
// both models when labels are given.
class ClassifierStats {
 public:
  // `labels` may be null (no labelled data).
  void AddBatch(const float* ref, const float* cand, const int64_t* labels, int64_t batch,
                int64_t classes);
  int64_t samples() const { return samples_; }
  bool labelled() const { return labelled_ > 0; }
  double Top1Agreement() const;
  double RefAccuracy() const;
  double CandAccuracy() const;
  double AccuracyDelta() const { return CandAccuracy() - RefAccuracy(); }

 private:
  int64_t samples_ = 0, agree_ = 0, labelled_ = 0, ref_correct_ = 0, cand_correct_ = 0;
};

// Index of the largest value (first on ties).
int64_t ArgMax(const float* v, int64_t n);

}  // namespace slimpack::report

#endif  // SLIMPACK_REPORT_METRICS_H_
