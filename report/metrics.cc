// Sums in double in input order, so the same data gives the same bits.
#include "report/metrics.h"

#include <algorithm>
#include <cmath>

namespace slimpack::report {

void TensorErrorStats::SetClipRange(float lo, float hi) {
  has_clip_ = true;
  clip_lo_ = lo;
  clip_hi_ = hi;
}

void TensorErrorStats::Add(const float* ref, const float* cand, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double r = ref[i], c = cand[i];
    if (!std::isfinite(r) || !std::isfinite(c)) {
      ++nonfinite_;
      continue;
    }
    const double e = c - r;
    sum_ref_sq_ += r * r;
    sum_cand_sq_ += c * c;
    sum_err_sq_ += e * e;
    dot_ += r * c;
    max_abs_ = std::max(max_abs_, std::fabs(e));
    ref_min_ = std::min(ref_min_, r);
    ref_max_ = std::max(ref_max_, r);
    if (has_clip_ && (ref[i] < clip_lo_ || ref[i] > clip_hi_)) ++overflow_;
    ++count_;
  }
}

double TensorErrorStats::Sqnr() const {
  if (sum_err_sq_ == 0) return std::numeric_limits<double>::infinity();
  if (sum_ref_sq_ == 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(sum_ref_sq_ / sum_err_sq_);
}

double TensorErrorStats::Cosine() const {
  // Two all-zero tensors are identical: cosine 1 rather than 0/0.
  if (sum_ref_sq_ == 0 && sum_cand_sq_ == 0) return 1.0;
  if (sum_ref_sq_ == 0 || sum_cand_sq_ == 0) return 0.0;
  return dot_ / std::sqrt(sum_ref_sq_ * sum_cand_sq_);
}

double TensorErrorStats::RelativeL2() const {
  if (sum_err_sq_ == 0) return 0.0;
  if (sum_ref_sq_ == 0) return std::numeric_limits<double>::infinity();
  return std::sqrt(sum_err_sq_ / sum_ref_sq_);
}

double TensorErrorStats::OverflowRate() const {
  return count_ == 0 ? 0.0 : static_cast<double>(overflow_) / static_cast<double>(count_);
}

double Percentile(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return 0;
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  double p = fraction * static_cast<double>(sorted.size() - 1);
  const size_t ip = static_cast<size_t>(p);
  p -= static_cast<double>(ip);
  const size_t next = std::min(ip + 1, sorted.size() - 1);
  return (1 - p) * sorted[ip] + p * sorted[next];
}

int64_t ArgMax(const float* v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return best;
}

namespace {

// log-softmax of one row in double.
void LogSoftmax(const float* logits, int64_t n, std::vector<double>& out) {
  out.resize(n);
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(logits[i]) - lse;
}

std::vector<std::pair<double, double>> Table(std::vector<double> values,
                                             const std::vector<double>& fractions) {
  std::sort(values.begin(), values.end());
  std::vector<std::pair<double, double>> out;
  for (double f : fractions) out.emplace_back(f * 100.0, Percentile(values, f));
  return out;
}

}  // namespace

void NextTokenStats::AddWindow(const float* ref, const float* cand, const int64_t* ids,
                               int64_t window, int64_t vocab) {
  std::vector<double> lr, lc;
  for (int64_t t = 0; t + 1 < window; ++t) {
    const float* r = ref + t * vocab;
    const float* c = cand + t * vocab;
    LogSoftmax(r, vocab, lr);
    LogSoftmax(c, vocab, lc);
    double kld = 0;
    for (int64_t v = 0; v < vocab; ++v) kld += std::exp(lr[v]) * (lr[v] - lc[v]);
    const int64_t next = ids[t + 1];
    kld_.push_back(kld);
    dp_.push_back(std::exp(lc[next]) - std::exp(lr[next]));
    nll_ref_ -= lr[next];
    nll_cand_ -= lc[next];
    if (ArgMax(r, vocab) == ArgMax(c, vocab)) ++same_top_;
  }
}

NextTokenStats::Summary NextTokenStats::Summarize() const {
  Summary s;
  const int64_t n = static_cast<int64_t>(kld_.size());
  s.tokens = n;
  if (n == 0) return s;
  double sum = 0, sum_sq = 0, dsum = 0, dsq = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += kld_[i];
    sum_sq += kld_[i] * kld_[i];
    dsum += dp_[i];
    dsq += dp_[i] * dp_[i];
  }
  s.mean_kld = sum / n;
  if (n > 1) {
    const double var = std::max(0.0, (sum_sq / n - s.mean_kld * s.mean_kld) * n / (n - 1));
    s.kld_stderr = std::sqrt(var / n);
  }
  s.kld_percentiles =
      Table(kld_, {1.0, 0.999, 0.99, 0.95, 0.90, 0.5, 0.10, 0.05, 0.01, 0.001, 0.0});
  s.top1_agreement = static_cast<double>(same_top_) / n;
  s.mean_dp = dsum / n;
  s.rms_dp = std::sqrt(dsq / n);
  s.dp_percentiles =
      Table(dp_, {1.0, 0.999, 0.99, 0.95, 0.90, 0.75, 0.5, 0.25, 0.10, 0.05, 0.01, 0.001, 0.0});
  s.ppl_ref = std::exp(nll_ref_ / n);
  s.ppl_cand = std::exp(nll_cand_ / n);
  s.ppl_delta = s.ppl_cand - s.ppl_ref;
  s.ppl_ratio = s.ppl_cand / s.ppl_ref;
  return s;
}

void ClassifierStats::AddBatch(const float* ref, const float* cand, const int64_t* labels,
                               int64_t batch, int64_t classes) {
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t r = ArgMax(ref + b * classes, classes);
    const int64_t c = ArgMax(cand + b * classes, classes);
    ++samples_;
    if (r == c) ++agree_;
    if (labels != nullptr) {
      ++labelled_;
      if (r == labels[b]) ++ref_correct_;
      if (c == labels[b]) ++cand_correct_;
    }
  }
}

double ClassifierStats::Top1Agreement() const {
  return samples_ == 0 ? 0.0 : static_cast<double>(agree_) / samples_;
}
double ClassifierStats::RefAccuracy() const {
  return labelled_ == 0 ? 0.0 : static_cast<double>(ref_correct_) / labelled_;
}
double ClassifierStats::CandAccuracy() const {
  return labelled_ == 0 ? 0.0 : static_cast<double>(cand_correct_) / labelled_;
}

}  // namespace slimpack::report
