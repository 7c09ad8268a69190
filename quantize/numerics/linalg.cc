// Blocked Cholesky and triangular inverse (see linalg.h).
#include "quantize/numerics/linalg.h"

#include <algorithm>
#include <cmath>

#include "support/ordered_products.h"
#include "support/simd_clones.h"

namespace slimpack::quant::internal {
namespace {

using support::kStripWidth;
using support::LoadV4;
using support::StoreV4;
using support::StripCount;
using support::StripIndex;
using support::SubtractProducts;
using support::V4d;

constexpr int64_t kBlock = 64;
// Panel rows one pass of the trailing update keeps hot (16 KiB of L1).
constexpr int64_t kTrailRows = 32;
// Rows of L^-1 whose shared part is one SubtractProducts call.
constexpr int64_t kInverseRows = 16;

// Dot's order: lane l of `acc` holds the products of k = l (mod 4) for
// k < k4, summed in k order; the tail k4 .. n-1 goes onto lane 0; then
// (lane0 + lane1) + (lane2 + lane3). Always inlined: V4d by value.
__attribute__((always_inline)) inline double FinishDot(V4d acc,
                                                      const double* a,
                                                      const double* b,
                                                      int64_t k4, int64_t n) {
  double s0 = acc[0];
  for (int64_t k = k4; k < n; ++k) s0 += a[k] * b[k];
  return (s0 + acc[1]) + (acc[2] + acc[3]);
}

// Four fixed partial sums (lane l takes k = l mod 4): breaks the add
// latency chain and maps onto one vector; fixed order.
inline double Dot(const double* a, const double* b, int64_t n) {
  V4d acc = {0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) acc += LoadV4(a + k) * LoadV4(b + k);
  return FinishDot(acc, a, b, k, n);
}

// a[i][j] -= dot(panel row i, panel row j) for 0 <= j <= i < m (a has
// row stride lda; panel rows have length b). Two rows against four
// columns at a time, each dot with Dot's exact order, and panel rows in
// groups of kTrailRows so the columns' rows stay in L1 while i sweeps.
SLIMPACK_SIMD_CLONES
void TrailingUpdate(double* a, int64_t lda, const double* panel, int64_t m,
                    int64_t b) {
  const int64_t b4 = b & ~int64_t{3};
  for (int64_t j0 = 0; j0 < m; j0 += kTrailRows) {
    const int64_t j1 = std::min(m, j0 + kTrailRows);
    int64_t i = j0;
    for (; i + 2 <= m; i += 2) {
      const double* x0 = panel + i * b;
      const double* x1 = x0 + b;
      double* r0 = a + i * lda;
      double* r1 = r0 + lda;
      const int64_t end0 = std::min(j1, i + 1), end1 = std::min(j1, i + 2);
      int64_t j = j0;
      for (; j + 4 <= end0; j += 4) {
        const double* y0 = panel + j * b;
        const double* y1 = y0 + b;
        const double* y2 = y1 + b;
        const double* y3 = y2 + b;
        V4d c00 = {0, 0, 0, 0}, c01 = c00, c02 = c00, c03 = c00;
        V4d c10 = c00, c11 = c00, c12 = c00, c13 = c00;
        for (int64_t k = 0; k < b4; k += 4) {
          const V4d u0 = LoadV4(x0 + k), u1 = LoadV4(x1 + k);
          const V4d v0 = LoadV4(y0 + k), v1 = LoadV4(y1 + k);
          const V4d v2 = LoadV4(y2 + k), v3 = LoadV4(y3 + k);
          c00 += u0 * v0;
          c01 += u0 * v1;
          c02 += u0 * v2;
          c03 += u0 * v3;
          c10 += u1 * v0;
          c11 += u1 * v1;
          c12 += u1 * v2;
          c13 += u1 * v3;
        }
        r0[j] -= FinishDot(c00, x0, y0, b4, b);
        r0[j + 1] -= FinishDot(c01, x0, y1, b4, b);
        r0[j + 2] -= FinishDot(c02, x0, y2, b4, b);
        r0[j + 3] -= FinishDot(c03, x0, y3, b4, b);
        r1[j] -= FinishDot(c10, x1, y0, b4, b);
        r1[j + 1] -= FinishDot(c11, x1, y1, b4, b);
        r1[j + 2] -= FinishDot(c12, x1, y2, b4, b);
        r1[j + 3] -= FinishDot(c13, x1, y3, b4, b);
      }
      for (; j < end1; ++j) {
        if (j < end0) r0[j] -= Dot(x0, panel + j * b, b);
        r1[j] -= Dot(x1, panel + j * b, b);
      }
    }
    for (; i < m; ++i) {
      for (int64_t j = j0; j < std::min(j1, i + 1); ++j) {
        a[i * lda + j] -= Dot(panel + i * b, panel + j * b, b);
      }
    }
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
  std::vector<double> panel, t(static_cast<size_t>(kInverseRows * kBlock));
  // Column panel [j0, j1) of X = L^-1 by forward substitution, kept as a
  // strip-major (n - j0) x b block: row i is (e_i - sum_{k<i} L[i,k] X[k])
  // / L[i,i] with k rising. Rows go kInverseRows at a time: the terms of
  // the rows above the group are one SubtractProducts call for the group,
  // the terms inside it follow row by row, continuing the same k order.
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t j1 = std::min(n, j0 + kBlock), b = j1 - j0;
    const int64_t m = n - j0, sstride = m * kStripWidth;
    panel.assign(static_cast<size_t>(StripCount(b) * sstride), 0.0);
    for (int64_t i0 = j0; i0 < n; i0 += kInverseRows) {
      const int64_t nr = std::min(kInverseRows, n - i0);
      std::fill(t.begin(), t.end(), 0.0);
      for (int64_t r = 0; r < nr; ++r) {
        if (i0 + r < j1) t[r * b + (i0 + r - j0)] = 1.0;
      }
      SubtractProducts(t.data(), b, l + i0 * n + j0, n, panel.data(),
                       sstride, nr, i0 - j0, b);
      for (int64_t r = 0; r < nr; ++r) {
        const int64_t i = i0 + r;
        const double* li = l + i * n;
        double* tr = t.data() + r * b;
        SubtractProducts(tr, b, li + i0, n,
                         panel.data() + (i0 - j0) * kStripWidth, sstride, 1,
                         r, b);
        for (int64_t c2 = 0; c2 < b; ++c2) {
          panel[StripIndex(i - j0, c2, sstride)] = tr[c2] / li[i];
        }
      }
    }
    for (int64_t i = j0; i < n; ++i) {
      for (int64_t j = j0; j < std::min(j1, i + 1); ++j) {
        out[i * n + j] = panel[StripIndex(i - j0, j - j0, sstride)];
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
