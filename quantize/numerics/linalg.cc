// Blocked Cholesky and triangular inverse (see linalg.h).
#include "quantize/numerics/linalg.h"

#include <algorithm>
#include <cmath>

#include "quantize/numerics/simd_clones.h"

namespace slimpack::quant::internal {
namespace {

constexpr int64_t kBlock = 64;

// Four fixed partial sums (lane l takes k = l mod 4): breaks the add
// latency chain and maps onto one vector; fixed order.
inline double Dot(const double* a, const double* b, int64_t n) {
  V4d acc = {0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) acc += LoadV4(a + k) * LoadV4(b + k);
  double s0 = acc[0];
  for (; k < n; ++k) s0 += a[k] * b[k];
  return (s0 + acc[1]) + (acc[2] + acc[3]);
}

// a[i][j] -= dot(panel row i, panel row j) for 0 <= j <= i < m (a has
// row stride lda; panel rows have length b).
SLIMPACK_QUANT_SIMD_CLONES
void TrailingUpdate(double* a, int64_t lda, const double* panel, int64_t m,
                    int64_t b) {
  for (int64_t i = 0; i < m; ++i) {
    const double* pi = panel + i * b;
    double* row = a + i * lda;
    for (int64_t j = 0; j <= i; ++j) row[j] -= Dot(pi, panel + j * b, b);
  }
}

// t[c] -= coef[k] * rows[k * b + c] for k = 0 .. nk-1 in order.
SLIMPACK_QUANT_SIMD_CLONES
void SubtractRows(double* t, const double* coef, const double* rows,
                  int64_t nk, int64_t b) {
  int64_t c = 0;
  for (; c + 16 <= b; c += 16) {
    V4d a0 = LoadV4(t + c), a1 = LoadV4(t + c + 4);
    V4d a2 = LoadV4(t + c + 8), a3 = LoadV4(t + c + 12);
    for (int64_t k = 0; k < nk; ++k) {
      const double* pk = rows + k * b + c;
      const double ck = coef[k];
      a0 -= ck * LoadV4(pk);
      a1 -= ck * LoadV4(pk + 4);
      a2 -= ck * LoadV4(pk + 8);
      a3 -= ck * LoadV4(pk + 12);
    }
    StoreV4(t + c, a0);
    StoreV4(t + c + 4, a1);
    StoreV4(t + c + 8, a2);
    StoreV4(t + c + 12, a3);
  }
  for (; c < b; ++c) {
    double acc = t[c];
    for (int64_t k = 0; k < nk; ++k) acc -= coef[k] * rows[k * b + c];
    t[c] = acc;
  }
}

}  // namespace

int64_t CholeskyLowerInPlace(double* a, int64_t n) {
  std::vector<double> panel;
  for (int64_t k0 = 0; k0 < n; k0 += kBlock) {
    const int64_t k1 = std::min(n, k0 + kBlock), b = k1 - k0;
    // Diagonal block and the panel below it: contributions of earlier
    // blocks were already subtracted by their trailing updates.
    for (int64_t j = k0; j < k1; ++j) {
      const double* aj = a + j * n + k0;
      const double d = a[j * n + j] - Dot(aj, aj, j - k0);
      if (!(d > 0) || !std::isfinite(d)) return j;
      const double ljj = std::sqrt(d);
      a[j * n + j] = ljj;
      for (int64_t i = j + 1; i < n; ++i) {
        double* ai = a + i * n + k0;
        ai[j - k0] = (ai[j - k0] - Dot(ai, aj, j - k0)) / ljj;
      }
    }
    if (k1 == n) break;
    // Trailing update A22 -= L21 L21^T on a contiguous copy of the panel.
    const int64_t m = n - k1;
    panel.resize(static_cast<size_t>(m * b));
    for (int64_t i = 0; i < m; ++i) {
      std::copy(a + (k1 + i) * n + k0, a + (k1 + i) * n + k1,
                panel.begin() + i * b);
    }
    TrailingUpdate(a + k1 * n + k1, n, panel.data(), m, b);
  }
  return -1;
}

void InvertLowerTriangular(const double* l, int64_t n, double* out) {
  std::fill(out, out + n * n, 0.0);
  std::vector<double> panel, t(kBlock);
  // Column panel [j0, j1) of X = L^-1 by forward substitution, kept as a
  // contiguous (n - j0) x b block so the inner loop is a short axpy.
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t j1 = std::min(n, j0 + kBlock), b = j1 - j0;
    const int64_t m = n - j0;
    panel.assign(static_cast<size_t>(m * b), 0.0);
    for (int64_t i = j0; i < n; ++i) {
      std::fill(t.begin(), t.begin() + b, 0.0);
      if (i < j1) t[i - j0] = 1.0;
      const double* li = l + i * n;
      SubtractRows(t.data(), li + j0, panel.data(), i - j0, b);
      double* pi = panel.data() + (i - j0) * b;
      for (int64_t c2 = 0; c2 < b; ++c2) pi[c2] = t[c2] / li[i];
    }
    for (int64_t i = j0; i < n; ++i) {
      const double* pi = panel.data() + (i - j0) * b;
      for (int64_t j = j0; j < std::min(j1, i + 1); ++j) {
        out[i * n + j] = pi[j - j0];
      }
    }
  }
}

int64_t UpperCholeskyOfInverse(std::vector<double>& a, int64_t n,
                               std::vector<double>* u) {
  // J A J is the flat array reversed ((i, j) -> (n-1-i, n-1-j)). With
  // J A J = M M^T: A^-1 = (J M^-T J)(J M^-1 J), and J M^-1 J is upper.
  std::reverse(a.begin(), a.end());
  const int64_t bad = CholeskyLowerInPlace(a.data(), n);
  if (bad >= 0) return n - 1 - bad;
  u->resize(static_cast<size_t>(n * n));
  InvertLowerTriangular(a.data(), n, u->data());
  std::reverse(u->begin(), u->end());
  return -1;
}

}  // namespace slimpack::quant::internal
