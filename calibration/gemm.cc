#include "calibration/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <string>

namespace slimpack::calibration {
namespace {

// Below this many multiply-adds a product is one call: tiling would cost
// more than it saves.
constexpr int64_t kTileThreshold = 1 << 20;
constexpr int64_t kTileRows = 256;
constexpr int64_t kTileCols = 256;

}  // namespace

void UseSingleThreadedBlas() { openblas_set_num_threads(1); }

absl::Status Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n,
                   int64_t k, float alpha, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c,
                   int64_t ldc, ThreadPool* pool) {
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
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  const bool tile = static_cast<double>(m) * static_cast<double>(n) *
                         static_cast<double>(k) >=
                     static_cast<double>(kTileThreshold);
  const int64_t tile_m = tile ? std::min(m, kTileRows) : m;
  const int64_t tile_n = tile ? std::min(n, kTileCols) : n;
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

}  // namespace slimpack::calibration
