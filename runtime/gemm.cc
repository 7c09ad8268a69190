#include "runtime/gemm.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#ifdef __SSE2__
#include <xmmintrin.h>
#endif

#include "runtime/gemm/gemv_avx2.h"
#include "support/status_macros.h"

namespace slimpack::runtime {
namespace {

// Tiles hold at least this many multiply-adds: each task packs its own
// operands, so small tiles cost more than the parallelism they allow.
constexpr int64_t kMinTileWork = int64_t{4} << 20;
// At most this many tiles per product, and no tile narrower than
// kMinTileExtent along the axis that is cut (tall or wide products are cut
// along their long axis).
constexpr int64_t kMaxTiles = 16;
constexpr int64_t kMinTileExtent = 256;
// Tile extents are rounded up to a multiple of this so only the last tile
// has a ragged edge.
constexpr int64_t kTileAlign = 32;

// Cache blocking inside a task (GotoBLAS's loop order): for each kNc-wide
// column block and each kKc-deep slice, B is packed once and then used by
// every row of a kRowChunk-row chunk of A, which is packed kMc rows at a
// time. A packed B micro-panel (kKc x nr floats, 16 KiB for AVX-512) stays
// in L1 (32 KiB on Zen 4; kKc 256 filled it and ran 10-15 % slower) while
// A's micro-panels stream from L2. The accumulators of a chunk x column block
// live in a buffer between slices (the k loop is split, the chain of fused
// multiply-adds is not). Packing B once per row block instead took as long
// as the arithmetic on a 1024^3 product (B rows 4 KiB apart, re-read per
// 128 rows).
constexpr int64_t kKc = 128;
constexpr int64_t kMc = 128;
constexpr int64_t kNc = 256;
constexpr int64_t kRowChunk = 1024;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Operands {
  bool trans_a, trans_b;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
};

#ifdef __SSE2__
// Four rows of length kb, `ld` floats apart from s0, written transposed:
// element p of row q goes to dst[p * width + q]. Four depths at a time
// through a 4 x 4 transpose, so each packed row of four is one store (the
// element-by-element loop cost a seventh of a decoder's calibration pass);
// pure data movement, so the same bytes.
void TransposeFourRows(const float* s0, int64_t ld, int64_t kb, float* dst, int64_t width) {
  const float* s1 = s0 + ld;
  const float* s2 = s1 + ld;
  const float* s3 = s2 + ld;
  int64_t p = 0;
  for (; p + 4 <= kb; p += 4) {
    __m128 a = _mm_loadu_ps(s0 + p), b = _mm_loadu_ps(s1 + p);
    __m128 c = _mm_loadu_ps(s2 + p), d = _mm_loadu_ps(s3 + p);
    _MM_TRANSPOSE4_PS(a, b, c, d);
    _mm_storeu_ps(dst + p * width, a);
    _mm_storeu_ps(dst + (p + 1) * width, b);
    _mm_storeu_ps(dst + (p + 2) * width, c);
    _mm_storeu_ps(dst + (p + 3) * width, d);
  }
  for (; p < kb; ++p) {
    dst[p * width] = s0[p];
    dst[p * width + 1] = s1[p];
    dst[p * width + 2] = s2[p];
    dst[p * width + 3] = s3[p];
  }
}
#endif

// Rows i0 .. i0+mb of op(A), depth p0 .. p0+kb, as mr-row panels laid out
// [panel][p][r]; rows past mb are zeros.
void PackA(const Operands& o, int mr, int64_t i0, int64_t mb, int64_t p0,
           int64_t kb, float* out) {
  const int64_t panels = CeilDiv(mb, mr);
  for (int64_t ip = 0; ip < panels; ++ip) {
    float* dst = out + ip * kb * mr;
    int r = 0;
#ifdef __SSE2__
    // Four rows of A (contiguous in p) at a time; A's rows are repacked for
    // every column block.
    for (; !o.trans_a && r + 4 <= mr && ip * mr + r + 4 <= mb; r += 4) {
      TransposeFourRows(o.a + (i0 + ip * mr + r) * o.lda + p0, o.lda, kb, dst + r, mr);
    }
#endif
    for (; r < mr; ++r) {
      const int64_t i = ip * mr + r;
      if (i >= mb) {
        for (int64_t p = 0; p < kb; ++p) dst[p * mr + r] = 0.0f;
        continue;
      }
      if (o.trans_a) {  // op(A)[i, p] = A[p, i]
        const float* src = o.a + p0 * o.lda + (i0 + i);
        for (int64_t p = 0; p < kb; ++p) dst[p * mr + r] = src[p * o.lda];
      } else {
        const float* src = o.a + (i0 + i) * o.lda + p0;
        for (int64_t p = 0; p < kb; ++p) dst[p * mr + r] = src[p];
      }
    }
  }
}

// Columns j0 .. j0+nb of op(B), depth p0 .. p0+kb, as nr-column panels laid
// out [panel][p][j]; columns past nb are zeros. Both layouts are read along
// B's contiguous axis, one long run at a time: reading nr columns of each
// of kb rows per panel (rows up to 12 KiB apart) defeated the hardware
// prefetcher, and packing then cost more than the arithmetic.
void PackB(const Operands& o, int nr, int64_t j0, int64_t nb, int64_t p0,
           int64_t kb, float* out) {
  const int64_t panels = CeilDiv(nb, nr);
  if (o.trans_b) {  // op(B)[p, j] = B[j, p]: row j of B is contiguous in p
    // A transpose, in 8 x 8 blocks so both the rows read and the panel rows
    // written stay in L1 (column by column, a one-row product spent 10x its
    // arithmetic here).
    constexpr int64_t kT = 8;
    for (int64_t jp = 0; jp < panels; ++jp) {
      float* dst = out + jp * kb * nr;
      const int64_t jn = std::min<int64_t>(nr, nb - jp * nr);
#ifdef __SSE2__
      // Whole panels of a nr % 4 == 0 kernel (attention's K^T, most
      // weights): four columns of op(B), rows of B, at a time.
      if (jn == nr && nr % 4 == 0) {
        for (int64_t j = 0; j < nr; j += 4) {
          TransposeFourRows(o.b + (j0 + jp * nr + j) * o.ldb + p0, o.ldb, kb, dst + j, nr);
        }
        continue;
      }
#endif
      for (int64_t jt = 0; jt < nr; jt += kT) {
        for (int64_t pt = 0; pt < kb; pt += kT) {
          const int64_t pe = std::min(kb, pt + kT);
          for (int64_t j = jt; j < std::min<int64_t>(nr, jt + kT); ++j) {
            if (j >= jn) {
              for (int64_t p = pt; p < pe; ++p) dst[p * nr + j] = 0.0f;
              continue;
            }
            const float* src = o.b + (j0 + jp * nr + j) * o.ldb + p0;
            for (int64_t p = pt; p < pe; ++p) dst[p * nr + j] = src[p];
          }
        }
      }
    }
    return;
  }
  for (int64_t p = 0; p < kb; ++p) {  // row p of B, columns j0 .. j0+nb
    const float* src = o.b + (p0 + p) * o.ldb + j0;
    for (int64_t jp = 0; jp < panels; ++jp) {
      const int64_t jn = std::min<int64_t>(nr, nb - jp * nr);
      float* d = out + jp * kb * nr + p * nr;
      std::memcpy(d, src + jp * nr, static_cast<size_t>(jn) * sizeof(float));
      for (int64_t j = jn; j < nr; ++j) d[j] = 0.0f;
    }
  }
}

struct Scratch {
  std::vector<float> a, b, acc;
};

// C[i, j] for `rows` x `cols` accumulators at `acc` ([row panel][column
// panel][mr x nr], npanels column panels): alpha * acc, then + beta * C.
void Finish(const gemm::MicroKernel& kern, const float* acc, int64_t rows, int64_t cols,
            int64_t npanels, float alpha, float beta, float* c, int64_t ldc) {
  const int mr = kern.mr, nr = kern.nr;
  const int64_t tile = int64_t{mr} * nr;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t ip = i / mr, r = i % mr;
    float* crow = c + i * ldc;
    for (int64_t jp = 0; jp < npanels; ++jp) {
      const float* t = acc + (ip * npanels + jp) * tile + r * nr;
      const int64_t n = std::min<int64_t>(nr, cols - jp * nr);
      float* dst = crow + jp * nr;
      if (alpha == 1.0f && beta == 0.0f) {
        for (int64_t j = 0; j < n; ++j) dst[j] = t[j];
      } else if (beta == 0.0f) {
        for (int64_t j = 0; j < n; ++j) dst[j] = alpha * t[j];
      } else {
        for (int64_t j = 0; j < n; ++j) dst[j] = alpha * t[j] + beta * dst[j];
      }
    }
  }
}

// Rows i0 .. i0+mm x columns j0 .. j0+nn of C. With `packed` (made for
// this kernel's nr, j0 a multiple of it) B's panels are read from it
// instead of packed here.
void Tile(const gemm::MicroKernel& kern, const Operands& o, int64_t i0,
          int64_t mm, int64_t j0, int64_t nn, int64_t k, float alpha,
          float beta, float* c, int64_t ldc, const PackedB* packed = nullptr) {
  // Per thread, grown to the largest block seen: small products (attention
  // heads, one-token matmuls) would otherwise allocate on every call.
  thread_local Scratch s;
  const int mr = kern.mr, nr = kern.nr;
  const int64_t tile = int64_t{mr} * nr;
  const int64_t mc = std::max<int64_t>(mr, kMc / mr * mr);
  const int64_t nc = std::max<int64_t>(nr, kNc / nr * nr);
  const int64_t chunk = std::max<int64_t>(mc, kRowChunk / mc * mc);
  const int64_t kc = std::min(kKc, k);
  const auto grow = [](std::vector<float>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  };
  grow(s.a, CeilDiv(std::min(mc, mm), mr) * mr * kc);
  if (packed == nullptr) grow(s.b, CeilDiv(std::min(nc, nn), nr) * nr * kc);
  grow(s.acc, CeilDiv(std::min(chunk, mm), mr) * tile * CeilDiv(std::min(nc, nn), nr));
  for (int64_t jb = 0; jb < nn; jb += nc) {
    const int64_t nb = std::min(nc, nn - jb);
    const int64_t npanels = CeilDiv(nb, nr);
    for (int64_t rb = 0; rb < mm; rb += chunk) {
      const int64_t rows = std::min(chunk, mm - rb);
      for (int64_t p0 = 0; p0 < k; p0 += kKc) {
        const int64_t kb = std::min(kKc, k - p0);
        if (packed == nullptr) PackB(o, nr, j0 + jb, nb, p0, kb, s.b.data());
        // Panel jp of this block: rows p0 .. p0+kb of a packed panel are
        // the kb x nr run PackB writes.
        const auto b_panel = [&](int64_t jp) {
          return packed == nullptr ? s.b.data() + jp * kb * nr
                                   : packed->panel((j0 + jb) / nr + jp) + p0 * nr;
        };
        for (int64_t ib = 0; ib < rows; ib += mc) {
          const int64_t mb = std::min(mc, rows - ib);
          const int64_t mpanels = CeilDiv(mb, mr);
          PackA(o, mr, i0 + rb + ib, mb, p0, kb, s.a.data());
          float* acc = s.acc.data() + (ib / mr) * npanels * tile;
          for (int64_t jp = 0; jp < npanels; ++jp) {
            for (int64_t ip = 0; ip < mpanels; ++ip) {
              kern.fn(kb, s.a.data() + ip * kb * mr, b_panel(jp),
                      acc + (ip * npanels + jp) * tile, p0 == 0);
            }
          }
        }
      }
      Finish(kern, s.acc.data(), rows, nb, npanels, alpha, beta,
             c + (i0 + rb) * ldc + j0 + jb, ldc);
    }
  }
}

// Checks the sizes and does the products no kernel is needed for (empty
// output, or k == 0: C = beta*C). Sets *done when nothing is left.
absl::Status Prepare(int64_t m, int64_t n, int64_t k, float beta, float* c,
                     int64_t ldc, bool* done) {
  *done = true;
  for (int64_t v : {m, n, k}) {
    if (v < 0) return absl::InvalidArgumentError("GEMM size " + std::to_string(v) + " < 0");
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

// One row of A against B transposed goes to the packing-free GEMV (same
// bits) where the CPU has it.
bool UseGemv(bool trans_a, bool trans_b, int64_t m, int64_t k) {
  return m == 1 && !trans_a && trans_b && k > 0 && gemm::GemvTransBAvx2Available();
}

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

absl::Status SgemmWithKernel(const gemm::MicroKernel& kernel, bool trans_a,
                             bool trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float beta, float* c,
                             int64_t ldc) {
  bool done = false;
  RETURN_IF_ERROR(Prepare(m, n, k, beta, c, ldc, &done));
  if (done) return absl::OkStatus();
  Tile(kernel, Operands{trans_a, trans_b, a, lda, b, ldb}, 0, m, 0, n, k, alpha,
       beta, c, ldc);
  return absl::OkStatus();
}

absl::Status SgemmSingleCall(bool trans_a, bool trans_b, int64_t m, int64_t n,
                             int64_t k, float alpha, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float beta, float* c,
                             int64_t ldc) {
  if (UseGemv(trans_a, trans_b, m, k)) {
    bool done = false;
    RETURN_IF_ERROR(Prepare(m, n, k, beta, c, ldc, &done));
    if (!done) gemm::GemvTransBAvx2(0, n, k, alpha, a, b, ldb, beta, c);
    return absl::OkStatus();
  }
  return SgemmWithKernel(gemm::BestMicroKernel(), trans_a, trans_b, m, n, k,
                         alpha, a, lda, b, ldb, beta, c, ldc);
}

std::shared_ptr<const PackedB> PackedB::Pack(bool trans_b, int64_t k, int64_t n, const float* b,
                                             int64_t ldb) {
  auto p = std::make_shared<PackedB>();
  const int nr = gemm::BestMicroKernel().nr;
  p->k_ = k;
  p->n_ = n;
  p->nr_ = nr;
  p->data_.resize(static_cast<size_t>(CeilDiv(n, nr) * nr * k));
  if (k > 0 && n > 0) PackB(Operands{false, trans_b, nullptr, 0, b, ldb}, nr, 0, n, 0, k, p->data_.data());
  return p;
}

absl::Status SgemmConstantB(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                            float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                            const PackedB* packed, float beta, float* c, int64_t ldc,
                            ThreadPool* pool) {
  bool done = false;
  RETURN_IF_ERROR(Prepare(m, n, k, beta, c, ldc, &done));
  if (done) return absl::OkStatus();
  const double work = static_cast<double>(m) * static_cast<double>(n) *
                      static_cast<double>(k);
  if (UseGemv(trans_a, trans_b, m, k)) {
    const int64_t tile_n = GemmTileExtent(n, work);
    ParallelFor(pool, CeilDiv(n, tile_n), [&](int64_t t) {
      gemm::GemvTransBAvx2(t * tile_n, std::min(n, (t + 1) * tile_n), k, alpha, a, b, ldb,
                           beta, c);
    });
    return absl::OkStatus();
  }
  const gemm::MicroKernel& kern = gemm::BestMicroKernel();
  const Operands o{trans_a, trans_b, a, lda, b, ldb};
  // Cut only the longer output axis.
  const int64_t tile_m = m > n ? GemmTileExtent(m, work) : m;
  const int64_t tile_n = m > n ? n : GemmTileExtent(n, work);
  const int64_t tiles_m = CeilDiv(m, tile_m);
  const int64_t tiles_n = CeilDiv(n, tile_n);
  // Tiles start at multiples of tile_n (a multiple of 32, or all of n):
  // whole panels of any kernel with nr dividing it.
  if (packed != nullptr &&
      (packed->nr() != kern.nr || packed->k() != k || packed->n() != n ||
       (tiles_n > 1 && tile_n % kern.nr != 0))) {
    packed = nullptr;
  }
  ParallelFor(pool, tiles_m * tiles_n, [&](int64_t t) {
    const int64_t i0 = (t / tiles_n) * tile_m;
    const int64_t j0 = (t % tiles_n) * tile_n;
    Tile(kern, o, i0, std::min(tile_m, m - i0), j0, std::min(tile_n, n - j0), k,
         alpha, beta, c, ldc, packed);
  });
  return absl::OkStatus();
}

absl::Status Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n,
                   int64_t k, float alpha, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c,
                   int64_t ldc, ThreadPool* pool) {
  return SgemmConstantB(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, nullptr, beta, c, ldc,
                        pool);
}

}  // namespace slimpack::runtime
