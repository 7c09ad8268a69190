// Threshold searches. Accumulations run in a fixed index order in double, so
// the chosen threshold is a pure function of the histogram.
#include "calibration/range_methods.h"
#include "support/portable_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace slimpack::calibration {
namespace {

// KL(P || Q) of two unnormalised distributions over the same bins. Q bins
// that are empty where P is not get `eps` mass (taken evenly from the
// non-empty ones), as MXNet's _smooth_distribution does, so no candidate is
// rejected outright.
double KlDivergence(const std::vector<double>& p, const std::vector<double>& q) {
  constexpr double kEps = 1e-4;
  double p_sum = 0, q_sum = 0;
  size_t q_zero = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    p_sum += p[k];
    q_sum += q[k];
    if (q[k] == 0) ++q_zero;
  }
  if (p_sum == 0 || q_sum == 0) return std::numeric_limits<double>::infinity();
  const size_t q_nonzero = q.size() - q_zero;
  const double take = q_nonzero == 0 ? 0 : kEps * q_zero / q_nonzero;
  double kl = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k] == 0) continue;
    const double pk = p[k] / p_sum;
    double qk = q[k] == 0 ? kEps : q[k] / q_sum - take;
    if (qk <= 0) qk = kEps;
    kl += pk * pmath::Log(pk / qk);
  }
  return kl;
}

}  // namespace

double EntropyThreshold(const std::vector<uint64_t>& abs_counts,
                        double bin_width, int levels) {
  const size_t n = abs_counts.size();
  size_t last_nonzero = 0;
  for (size_t k = 0; k < n; ++k) {
    if (abs_counts[k] != 0) last_nonzero = k + 1;
  }
  if (levels <= 0 || last_nonzero <= static_cast<size_t>(levels)) {
    return static_cast<double>(last_nonzero) * bin_width;
  }
  // Suffix sums give the outlier mass folded into P's last bin.
  std::vector<double> suffix(n + 1, 0);
  for (size_t k = n; k-- > 0;) suffix[k] = suffix[k + 1] + abs_counts[k];

  double best_kl = std::numeric_limits<double>::infinity();
  size_t best_i = last_nonzero;
  std::vector<double> p, q;
  // Each candidate costs O(i), so a full sweep is O(bins^2); with many
  // per-channel histograms that dominates calibration. Candidates are
  // therefore spaced to at most kMaxEntropyCandidates (the last occupied
  // bin is always one).
  const size_t span = last_nonzero - levels;
  const size_t stride = std::max<size_t>(1, (span + kMaxEntropyCandidates - 1) / kMaxEntropyCandidates);
  for (size_t i = levels + span % stride; i <= last_nonzero; i += stride) {
    p.assign(abs_counts.begin(), abs_counts.begin() + i);
    p[i - 1] += suffix[i];
    q.assign(i, 0);
    // Group g covers bins [g*i/levels, (g+1)*i/levels): integer split that
    // spreads the remainder, so every bin belongs to exactly one group.
    for (int g = 0; g < levels; ++g) {
      const size_t begin = g * i / levels, end = (g + 1) * i / levels;
      double mass = 0;
      size_t nonempty = 0;
      for (size_t k = begin; k < end; ++k) {
        mass += abs_counts[k];
        if (abs_counts[k] != 0) ++nonempty;
      }
      if (nonempty == 0) continue;
      for (size_t k = begin; k < end; ++k) {
        if (abs_counts[k] != 0) q[k] = mass / nonempty;
      }
    }
    const double kl = KlDivergence(p, q);
    if (kl < best_kl) {  // strict: ties keep the smaller threshold
      best_kl = kl;
      best_i = i;
    }
  }
  return static_cast<double>(best_i) * bin_width;
}

double MseThreshold(const std::vector<uint64_t>& abs_counts, double bin_width,
                    int levels) {
  const size_t n = abs_counts.size();
  // Suffix sums of count, count*c, count*c^2 over bin centres c.
  std::vector<double> s0(n + 1, 0), s1(n + 1, 0), s2(n + 1, 0);
  for (size_t k = n; k-- > 0;) {
    const double c = (k + 0.5) * bin_width;
    const double cnt = static_cast<double>(abs_counts[k]);
    s0[k] = s0[k + 1] + cnt;
    s1[k] = s1[k + 1] + cnt * c;
    s2[k] = s2[k + 1] + cnt * c * c;
  }
  double best = std::numeric_limits<double>::infinity();
  size_t best_j = n;
  for (size_t j = 1; j <= n; ++j) {
    const double t = j * bin_width;
    const double step = t / levels;
    const double inside = s0[0] - s0[j];
    const double err = inside * step * step / 12 +
                       (s2[j] - 2 * t * s1[j] + t * t * s0[j]);
    if (err < best) {
      best = err;
      best_j = j;
    }
  }
  return static_cast<double>(best_j) * bin_width;
}

}  // namespace slimpack::calibration
