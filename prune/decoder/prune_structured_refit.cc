// Least-squares refit of a consumer's kept input columns and the output
// error it leaves (RefitColumns, OutputError; prune_structured.h): pure
// numerics on X^T X, separate from the checkpoint slicing that calls them.
#include "prune/decoder/prune_structured.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace slimpack::prune {

std::vector<float> RefitColumns(const std::vector<float>& w, int64_t rows, int64_t n,
                                const std::vector<double>& xtx,
                                const std::vector<int64_t>& kept, double damp) {
  const int64_t k = static_cast<int64_t>(kept.size());
  // A = H[S,S] + lambda I, Cholesky A = L L^T.
  std::vector<double> a(k * k);
  double mean_diag = 0;
  for (int64_t i = 0; i < k; ++i) mean_diag += xtx[kept[i] * n + kept[i]];
  mean_diag = k > 0 ? mean_diag / k : 0;
  const double lambda = std::max(damp * mean_diag, 1e-12);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) a[i * k + j] = xtx[kept[i] * n + kept[j]];
  for (int64_t i = 0; i < k; ++i) a[i * k + i] += lambda;
  for (int64_t j = 0; j < k; ++j) {
    double d = a[j * k + j];
    for (int64_t p = 0; p < j; ++p) d -= a[j * k + p] * a[j * k + p];
    d = std::sqrt(std::max(d, 1e-300));
    a[j * k + j] = d;
    for (int64_t i = j + 1; i < k; ++i) {
      double s = a[i * k + j];
      for (int64_t p = 0; p < j; ++p) s -= a[i * k + p] * a[j * k + p];
      a[i * k + j] = s / d;
    }
  }
  std::vector<float> out(rows * k);
  std::vector<double> b(k), y(k);
  for (int64_t r = 0; r < rows; ++r) {
    // b = H[S,:] w_r
    for (int64_t i = 0; i < k; ++i) {
      const double* hrow = &xtx[kept[i] * n];
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += hrow[j] * w[r * n + j];
      b[i] = s;
    }
    for (int64_t i = 0; i < k; ++i) {  // L y = b
      double s = b[i];
      for (int64_t p = 0; p < i; ++p) s -= a[i * k + p] * y[p];
      y[i] = s / a[i * k + i];
    }
    for (int64_t i = k - 1; i >= 0; --i) {  // L^T x = y
      double s = y[i];
      for (int64_t p = i + 1; p < k; ++p) s -= a[p * k + i] * y[p];
      y[i] = s / a[i * k + i];
    }
    for (int64_t i = 0; i < k; ++i) out[r * k + i] = static_cast<float>(y[i]);
  }
  return out;
}

double OutputError(const std::vector<float>& w, int64_t rows, int64_t n,
                   const std::vector<double>& xtx, const std::vector<int64_t>& kept,
                   const std::vector<float>& w_kept) {
  const int64_t k = static_cast<int64_t>(kept.size());
  double total = 0;
  std::vector<double> e(n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) e[j] = w[r * n + j];
    for (int64_t i = 0; i < k; ++i) e[kept[i]] -= w_kept[r * k + i];
    for (int64_t i = 0; i < n; ++i) {
      if (e[i] == 0) continue;
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += xtx[i * n + j] * e[j];
      total += e[i] * s;
    }
  }
  return total;
}

}  // namespace slimpack::prune
