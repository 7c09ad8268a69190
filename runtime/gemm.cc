#include "runtime/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <string>

#include "support/status_macros.h"

namespace slimpack::runtime {
namespace {

// Tiles hold at least this many multiply-adds (about 40 us at 100
// GFLOP/s): every BLAS call costs setup and re-packs its operands, so small
// tiles cost more than the parallelism they allow.
constexpr int64_t kMinTileWork = int64_t{4} << 20;
// At most this many tiles per product, and no tile narrower than
// kMinTileExtent along the axis that is cut (tall or wide products are cut
// along their long axis, which keeps each call's shape BLAS-friendly).
constexpr int64_t kMaxTiles = 16;
constexpr int64_t kMinTileExtent = 256;
// Tile extents are rounded up to a multiple of this (a 16-float AVX-512
// vector) so only the last tile has a ragged edge.
constexpr int64_t kTileAlign = 16;

}  // namespace

int64_t GemmTileExtent(int64_t len, double work) {
  int64_t tiles = static_cast<int64_t>(work / static_cast<double>(kMinTileWork));
  tiles = std::min({tiles, kMaxTiles, len / kMinTileExtent});
  // A multiple of 4 (or 2) splits evenly over 2 or 4 threads.
  tiles = tiles >= 4 ? tiles / 4 * 4 : tiles / 2 * 2;
  if (tiles <= 1) return len;
  const int64_t extent = (len + tiles - 1) / tiles;
  return std::min(len, (extent + kTileAlign - 1) / kTileAlign * kTileAlign);
}

namespace {

// Checks the sizes fit BLAS ints and does the products BLAS is not called
// for (empty output, or k == 0: C = beta*C). Sets *done when nothing is left.
absl::Status Prepare(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                     float beta, float* c, int64_t ldc, bool* done) {
  *done = true;
  for (int64_t v : {m, n, k, lda, ldb, ldc}) {
    if (v < 0 || v > INT_MAX) {
      return absl::InvalidArgumentError(
          "GEMM size " + std::to_string(v) + " outside the BLAS int range");
    }
  }
  if (m == 0 || n == 0) return absl::OkStatus();
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
      }
    }
    return absl::OkStatus();
  }
  *done = false;
  return absl::OkStatus();
}

}  // namespace

void UseSingleThreadedBlas() { openblas_set_num_threads(1); }

absl::Status SgemmSingleCall(bool trans_a, bool trans_b, int64_t m, int64_t n,
                             int64_t k, float alpha, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float beta, float* c,
                             int64_t ldc) {
  bool done = false;
  RETURN_IF_ERROR(Prepare(m, n, k, lda, ldb, beta, c, ldc, &done));
  if (done) return absl::OkStatus();
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
  return absl::OkStatus();
}

absl::Status Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n,
                   int64_t k, float alpha, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c,
                   int64_t ldc, ThreadPool* pool) {
  bool done = false;
  RETURN_IF_ERROR(Prepare(m, n, k, lda, ldb, beta, c, ldc, &done));
  if (done) return absl::OkStatus();
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  const double work = static_cast<double>(m) * static_cast<double>(n) *
                      static_cast<double>(k);
  // Cut only the longer output axis: whole rows (or columns) per call.
  const int64_t tile_m = m > n ? GemmTileExtent(m, work) : m;
  const int64_t tile_n = m > n ? n : GemmTileExtent(n, work);
  const int64_t tiles_m = (m + tile_m - 1) / tile_m;
  const int64_t tiles_n = (n + tile_n - 1) / tile_n;
  ParallelFor(pool, tiles_m * tiles_n, [&](int64_t t) {
    const int64_t i0 = (t / tiles_n) * tile_m;
    const int64_t j0 = (t % tiles_n) * tile_n;
    const int64_t mm = std::min(tile_m, m - i0);
    const int64_t nn = std::min(tile_n, n - j0);
    // Row-major op(A) rows i0.. start at A + i0*lda, or column i0 if A^T.
    const float* a_tile = trans_a ? a + i0 : a + i0 * lda;
    const float* b_tile = trans_b ? b + j0 * ldb : b + j0;
    cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(mm),
                static_cast<int>(nn), static_cast<int>(k), alpha, a_tile,
                static_cast<int>(lda), b_tile, static_cast<int>(ldb), beta,
                c + i0 * ldc + j0, static_cast<int>(ldc));
  });
  return absl::OkStatus();
}

}  // namespace slimpack::runtime
