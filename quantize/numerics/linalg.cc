// Blocked Cholesky and triangular inverse (see linalg.h).
#include "quantize/numerics/linalg.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>

#include "support/ordered_products.h"
#include "support/simd_clones.h"
#include "support/threads.h"

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
// Blocks whose trailing updates share one pass over the matrix.
constexpr int kLookahead = 4;
// Below this many trailing rows a step's update is left to one thread:
// starting threads would cost more than the work (m^2 * 64 / 2 products).
constexpr int64_t kMinThreadedRows = 256;

// Runs piece(i, slot) for every i in [0, count) on up to `threads` threads,
// each taking the next piece not yet taken; `slot` (< threads) names the
// thread, for scratch buffers of its own. Which thread runs a piece does
// not change what it computes, so the schedule is free to be dynamic.
void ForEachPiece(int64_t count, int threads,
                  const std::function<void(int64_t, int64_t)>& piece) {
  const int64_t nthreads = std::max<int64_t>(1, std::min<int64_t>(threads, count));
  if (nthreads == 1) {
    for (int64_t i = 0; i < count; ++i) piece(i, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  support::RunOnThreads(nthreads, [&](int64_t slot) {
    for (int64_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) piece(i, slot);
  });
}

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

// A panel of L below a 64-column block, as the trailing update reads it,
// from the updated region's first row on: `rows` row-major (row i at
// rows + i * b) and `strips` the same panel transposed into strip-major
// columns (support/ordered_products.h: panel row i is column i, strips
// `sstride` = 8 * b doubles apart), the region's first row starting a strip.
struct PanelView {
  const double* rows;
  const double* strips;
  int64_t b;
};

// Rows one SubtractProducts call updates: its register tile's height.
constexpr int64_t kTrailTileRows = 8;

// a[i][j] -= panel(i, k) * panel(j, k) for each panel in turn, k rising,
// one multiply and one subtraction per term (SubtractProducts' order, the
// same on every CPU), for rows j0 <= i < m and the column group [j0,
// min(j0 + kTrailRows, cols)) (a has row stride lda). Rows above the
// diagonal inside the group are updated too: that part of the upper
// triangle is never read. An element takes the panels' terms in the order
// given, so one pass with several panels gives the bits of one pass per
// panel. Rows go eight at a time across the whole group, so a tile's
// panel rows stay in L1 while the group's four strips go by.
void TrailingUpdateGroup(double* a, int64_t lda, const PanelView* panels, int np, int64_t m,
                         int64_t cols, int64_t j0) {
  const int64_t width = std::min(cols, j0 + kTrailRows) - j0;
  for (int64_t i = j0; i < m; i += kTrailTileRows) {
    const int64_t nr = std::min(kTrailTileRows, m - i);
    for (int p = 0; p < np; ++p) {
      const int64_t b = panels[p].b, sstride = b * kStripWidth;
      SubtractProducts(a + i * lda + j0, lda, panels[p].rows + i * b, b,
                       panels[p].strips + j0 / kStripWidth * sstride, sstride, nr, b, width);
    }
  }
}

// The lower triangle of the m x m region at `a`, restricted to its first
// `cols` columns, column group by column group: the groups write disjoint
// columns, so they may run on any threads.
void TrailingUpdate(double* a, int64_t lda, const PanelView* panels, int np, int64_t m,
                    int64_t cols, int threads) {
  if (np == 0) return;
  const int64_t groups = (cols + kTrailRows - 1) / kTrailRows;
  ForEachPiece(groups, m < kMinThreadedRows ? 1 : threads, [&](int64_t g, int64_t) {
    TrailingUpdateGroup(a, lda, panels, np, m, cols, g * kTrailRows);
  });
}

// Column panel [j0, j1) of X = L^-1 into `out`, by forward substitution,
// kept as a strip-major (n - j0) x b block: row i is
// (e_i - sum_{k<i} L[i,k] X[k]) / L[i,i] with k rising. Rows go
// kInverseRows at a time: the terms of the rows above the group are one
// SubtractProducts call for the group, the terms inside it follow row by
// row, continuing the same k order.
// `panel` and `t` are the caller's scratch, reused across panels: a fresh
// multi-megabyte buffer per panel costs a page fault per 4 KiB.
void InvertPanel(const double* l, int64_t n, int64_t j0, double* out, std::vector<double>& panel,
                 std::vector<double>& t) {
  const int64_t j1 = std::min(n, j0 + kBlock), b = j1 - j0;
  const int64_t m = n - j0, sstride = m * kStripWidth;
  panel.assign(static_cast<size_t>(StripCount(b) * sstride), 0.0);
  t.resize(static_cast<size_t>(kInverseRows * kBlock));
  for (int64_t i0 = j0; i0 < n; i0 += kInverseRows) {
    const int64_t nr = std::min(kInverseRows, n - i0);
    std::fill(t.begin(), t.end(), 0.0);
    for (int64_t r = 0; r < nr; ++r) {
      if (i0 + r < j1) t[r * b + (i0 + r - j0)] = 1.0;
    }
    SubtractProducts(t.data(), b, l + i0 * n + j0, n, panel.data(), sstride, nr, i0 - j0, b);
    for (int64_t r = 0; r < nr; ++r) {
      const int64_t i = i0 + r;
      const double* li = l + i * n;
      double* tr = t.data() + r * b;
      SubtractProducts(tr, b, li + i0, n, panel.data() + (i0 - j0) * kStripWidth, sstride, 1,
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

// The view of a panel (`rows` row-major, `strips` its transpose strip-major)
// from its row `offset` on: the updated region's first row (a multiple of
// kBlock, so of the strip width).
PanelView View(const std::vector<double>& rows, const std::vector<double>& strips,
               int64_t offset) {
  return {rows.data() + offset * kBlock,
          strips.data() + offset / kStripWidth * kBlock * kStripWidth, kBlock};
}

}  // namespace

int64_t CholeskyLowerInPlace(double* a, int64_t n, int threads) {
  // Right-looking blocked Cholesky with lookahead: the trailing updates of
  // kLookahead consecutive blocks share one pass over the rest of the
  // matrix (which is read and written once instead of kLookahead times:
  // at 4096 columns it is 128 MiB, far past the caches). A block inside
  // the group first takes the pending updates of the blocks before it,
  // on its own columns only. Every element receives the same subtractions
  // in the same block order as with one pass per block.
  std::vector<std::vector<double>> panels(kLookahead), panel_strips(kLookahead);
  std::vector<int64_t> panel_first_row(kLookahead);
  for (int64_t s0 = 0; s0 < n; s0 += kLookahead * kBlock) {
    int np = 0;
    for (int64_t k0 = s0; k0 < std::min(n, s0 + kLookahead * kBlock); k0 += kBlock) {
      const int64_t k1 = std::min(n, k0 + kBlock), b = k1 - k0, m0 = n - k0;
      // Pending updates of this group's earlier blocks, on columns [k0, k1).
      PanelView views[kLookahead];
      for (int p = 0; p < np; ++p) views[p] = View(panels[p], panel_strips[p], k0 - panel_first_row[p]);
      TrailingUpdate(a + k0 * n + k0, n, views, np, m0, b, threads);
      // Diagonal block, column by column.
      for (int64_t j = k0; j < k1; ++j) {
        const double* aj = a + j * n + k0;
        const double d = a[j * n + j] - Dot(aj, aj, j - k0);
        if (!(d > 0) || !std::isfinite(d)) return j;
        const double ljj = std::sqrt(d);
        a[j * n + j] = ljj;
        for (int64_t i = j + 1; i < k1; ++i) {
          double* ai = a + i * n + k0;
          ai[j - k0] = (ai[j - k0] - Dot(ai, aj, j - k0)) / ljj;
        }
      }
      if (k1 == n) return -1;
      // The panel below it, row by row: L[i, j] needs only row i's entries
      // left of j and the diagonal block, so rows are independent (the
      // same terms in the same order as column by column), each copied on
      // to a contiguous panel for the trailing updates.
      const int64_t m = n - k1;
      std::vector<double>& panel = panels[np];
      std::vector<double>& strips = panel_strips[np];
      panel.resize(static_cast<size_t>(m * b));
      // The last strip's padding columns are never read (SubtractProducts
      // takes a partial strip element by element), so they stay unset.
      strips.resize(static_cast<size_t>(StripCount(m) * b * kStripWidth));
      panel_first_row[np] = k1;
      const int64_t pieces = (m + kTrailRows - 1) / kTrailRows;
      ForEachPiece(pieces, m < kMinThreadedRows ? 1 : threads, [&](int64_t piece, int64_t) {
        const int64_t r1 = std::min(m, (piece + 1) * kTrailRows);
        for (int64_t r = piece * kTrailRows; r < r1; ++r) {
          double* ai = a + (k1 + r) * n + k0;
          for (int64_t j = k0; j < k1; ++j) {
            ai[j - k0] = (ai[j - k0] - Dot(ai, a + j * n + k0, j - k0)) / a[j * n + j];
          }
          std::copy(ai, ai + b, panel.begin() + r * b);
          for (int64_t k = 0; k < b; ++k) {
            strips[StripIndex(k, r, b * kStripWidth)] = ai[k];
          }
        }
      });
      ++np;
    }
    // The group's updates on everything right of it, in one pass.
    const int64_t e = s0 + kLookahead * kBlock;
    if (e >= n) break;
    PanelView views[kLookahead];
    for (int p = 0; p < np; ++p) views[p] = View(panels[p], panel_strips[p], e - panel_first_row[p]);
    TrailingUpdate(a + e * n + e, n, views, np, n - e, n - e, threads);
  }
  return -1;
}

void InvertLowerTriangular(const double* l, int64_t n, double* out, int threads) {
  // The panels write every element on or below the diagonal.
  for (int64_t i = 0; i + 1 < n; ++i) std::fill(out + i * n + i + 1, out + (i + 1) * n, 0.0);
  // Panels depend on L alone, not on each other. The first (tallest) ones
  // cost the most, so they are handed out first.
  const int64_t panels = (n + kBlock - 1) / kBlock;
  const int64_t slots = std::max<int64_t>(1, std::min<int64_t>(threads, panels));
  std::vector<std::vector<double>> scratch(static_cast<size_t>(2 * slots));
  ForEachPiece(panels, threads, [&](int64_t p, int64_t slot) {
    InvertPanel(l, n, p * kBlock, out, scratch[2 * slot], scratch[2 * slot + 1]);
  });
}

int64_t UpperCholeskyOfInverse(double* a, int64_t n, double* u, int threads) {
  // J A J is the flat array reversed ((i, j) -> (n-1-i, n-1-j)). With
  // J A J = M M^T: A^-1 = (J M^-T J)(J M^-1 J), and J M^-1 J is upper.
  std::reverse(a, a + n * n);
  const int64_t bad = CholeskyLowerInPlace(a, n, threads);
  if (bad >= 0) return n - 1 - bad;
  InvertLowerTriangular(a, n, u, threads);
  std::reverse(u, u + n * n);
  return -1;
}

}  // namespace slimpack::quant::internal
