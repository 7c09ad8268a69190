// ONNX integer matmuls: MatMulInteger and QLinearMatMul, with the rounding
// rules at the top of quantize_linear.cc. The sums come from the byte dot
// products (int8_dot_ops.h) on CPUs that have them, else through the float
// GEMM where that is exact, else from an int16 pmaddwd product; all give
// the same int32 values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "runtime/gemm.h"
#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/int8_dot.h"
#include "runtime/kernels/int8_dot_ops.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/quantize_util.h"
#include "runtime/thread_pool.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

using quantize_internal::ConstantOrAbsent;
using quantize_internal::ExpectQuantInput;
using quantize_internal::ExpectZeroPointType;
using quantize_internal::IntsOf;
using quantize_internal::QParams;
using quantize_internal::ReadQParams;

// numpy matmul shape rules for integer operands: returns out dims and the
// per-batch matrix offsets of A and B.
struct MatMulShape {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> out_dims;
  std::vector<int64_t> a_off, b_off;  // in matrices
};

absl::StatusOr<MatMulShape> PlanMatMul(const RtTensor& a, const RtTensor& b) {
  if (a.rank() == 0 || b.rank() == 0) {
    return absl::InvalidArgumentError("operands must have rank >= 1, got " +
                                      a.DebugString() + " and " + b.DebugString());
  }
  std::vector<int64_t> ad = a.dims(), bd = b.dims();
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  MatMulShape p;
  p.m = ad[ad.size() - 2];
  p.k = ad.back();
  p.n = bd.back();
  if (bd[bd.size() - 2] != p.k) {
    return absl::InvalidArgumentError("inner dims differ: " + a.DebugString() +
                                      " x " + b.DebugString());
  }
  std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2);
  std::vector<int64_t> b_batch(bd.begin(), bd.end() - 2);
  ASSIGN_OR_RETURN(auto batch, BroadcastDims({a_batch, b_batch}));
  p.out_dims = batch;
  if (!a_vec) p.out_dims.push_back(p.m);
  if (!b_vec) p.out_dims.push_back(p.n);
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  p.a_off.assign(count, 0);
  p.b_off.assign(count, 0);
  if (!batch.empty()) {
    ForEachBroadcast<2>(batch,
                        {BroadcastStrides(a_batch, batch), BroadcastStrides(b_batch, batch)},
                        [&](int64_t o, const std::array<int64_t, 2>& in) {
                          p.a_off[o] = in[0];
                          p.b_off[o] = in[1];
                        });
  }
  return p;
}

// Rows of A per IntegerMatMul task.
constexpr int64_t kRowsPerTask = 16;

// Two 8-bit differences as the int16 pair pmaddwd multiplies.
int32_t Pair(int32_t lo, int32_t hi) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
}

// acc[i, j] = sum_k (a[i, k] - azp[i]) * (b[k, j] - bzp[j]), summed mod 2^32
// (azp per tensor or per row, bzp per tensor or per column; order-free, so blocking and threads cannot change a bit). Differences of
// 8-bit values fit int16: B is packed once per batch into panels of 8
// columns, [panel][k pair][column][2] int16, and a 4-row x 8-column tile of
// sums stays in registers while pmaddwd (SSE2, every x86-64) multiplies two
// k of four columns and adds each pair.
std::vector<int32_t> IntegerMatMul(const std::vector<int32_t>& a,
                                   const std::vector<int32_t>& b,
                                   const MatMulShape& p, const QParams& azp,
                                   const QParams& bzp, ThreadPool* pool) {
  constexpr int64_t kNr = 8, kMr = 4;
  std::vector<int32_t> acc(p.a_off.size() * p.m * p.n);
  const int64_t kpairs = (p.k + 1) / 2;
  const int64_t panels = (p.n + kNr - 1) / kNr;
  std::vector<int32_t> bpack(panels * kpairs * kNr);  // one int16 pair each
  for (size_t bi = 0; bi < p.a_off.size(); ++bi) {
    const int32_t* pa = a.data() + p.a_off[bi] * p.m * p.k;
    const int32_t* pb = b.data() + p.b_off[bi] * p.k * p.n;
    int32_t* po = acc.data() + bi * p.m * p.n;
    for (int64_t jp = 0; jp < panels; ++jp) {
      for (int64_t kp = 0; kp < kpairs; ++kp) {
        int32_t* dst = bpack.data() + (jp * kpairs + kp) * kNr;
        for (int64_t c = 0; c < kNr; ++c) {
          const int64_t j = jp * kNr + c, k = 2 * kp;
          if (j >= p.n) {
            dst[c] = 0;
            continue;
          }
          const int32_t lo = pb[k * p.n + j] - bzp.z(j);
          const int32_t hi = k + 1 < p.k ? pb[(k + 1) * p.n + j] - bzp.z(j) : 0;
          dst[c] = Pair(lo, hi);
        }
      }
    }
    const int64_t tasks = (p.m + kRowsPerTask - 1) / kRowsPerTask;
    ParallelFor(pool, tasks, [&](int64_t t) {
      const int64_t i0 = t * kRowsPerTask, i1 = std::min(p.m, i0 + kRowsPerTask);
      // The task's rows as int16 pairs, [k pair][row], rows past i1 zero.
      std::vector<int32_t> apack(kpairs * kRowsPerTask, 0);
      for (int64_t i = i0; i < i1; ++i) {
        const int32_t* row = pa + i * p.k;
        for (int64_t kp = 0; kp < kpairs; ++kp) {
          const int64_t k = 2 * kp;
          apack[kp * kRowsPerTask + (i - i0)] =
              Pair(row[k] - azp.z(i), k + 1 < p.k ? row[k + 1] - azp.z(i) : 0);
        }
      }
      int32_t tile[kMr][kNr];
      for (int64_t r0 = 0; r0 < i1 - i0; r0 += kMr) {
        for (int64_t jp = 0; jp < panels; ++jp) {
          const int32_t* bp = bpack.data() + jp * kpairs * kNr;
          const int32_t* ap = apack.data() + r0;
#if defined(__SSE2__)
          __m128i s[kMr][2];
          for (auto& row : s) row[0] = row[1] = _mm_setzero_si128();
          for (int64_t kp = 0; kp < kpairs; ++kp) {
            const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bp + kp * kNr));
            const __m128i b1 =
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(bp + kp * kNr + 4));
            const int32_t* ak = ap + kp * kRowsPerTask;
            for (int r = 0; r < kMr; ++r) {
              const __m128i av = _mm_set1_epi32(ak[r]);
              s[r][0] = _mm_add_epi32(s[r][0], _mm_madd_epi16(b0, av));
              s[r][1] = _mm_add_epi32(s[r][1], _mm_madd_epi16(b1, av));
            }
          }
          for (int r = 0; r < kMr; ++r) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(tile[r]), s[r][0]);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(tile[r] + 4), s[r][1]);
          }
#else
          for (auto& row : tile) std::fill(row, row + kNr, 0);
          for (int64_t kp = 0; kp < kpairs; ++kp) {
            const int32_t* ak = ap + kp * kRowsPerTask;
            for (int r = 0; r < kMr; ++r) {
              const auto a0 = static_cast<int32_t>(static_cast<int16_t>(ak[r] & 0xffff));
              const auto a1 = static_cast<int32_t>(static_cast<int16_t>(
                  static_cast<uint32_t>(ak[r]) >> 16));
              for (int64_t c = 0; c < kNr; ++c) {
                const int32_t bw = bp[kp * kNr + c];
                const int32_t prod = a0 * static_cast<int16_t>(bw & 0xffff) +
                                     a1 * static_cast<int16_t>(static_cast<uint32_t>(bw) >> 16);
                tile[r][c] = static_cast<int32_t>(static_cast<uint32_t>(tile[r][c]) +
                                                  static_cast<uint32_t>(prod));
              }
            }
          }
#endif
          const int64_t rows = std::min(kMr, i1 - i0 - r0);
          const int64_t cols = std::min(kNr, p.n - jp * kNr);
          for (int64_t r = 0; r < rows; ++r) {
            std::copy_n(tile[r], cols, po + (i0 + r0 + r) * p.n + jp * kNr);
          }
        }
      }
    });
  }
  return acc;
}

// B minus its per-column zero points (B's layout), and the largest column
// sum of |b - bzp| over B's matrices.
std::shared_ptr<const quantize_internal::CentredWeights> CentreMatMulB(const RtTensor& b,
                                                                      const MatMulShape& p,
                                                                      const QParams& bzp) {
  auto out = std::make_shared<quantize_internal::CentredWeights>();
  const int64_t kn = p.k * p.n;
  out->values.resize(b.num_elements());
  std::vector<float> zb(p.n), colsum(p.n);
  for (int64_t j = 0; j < p.n; ++j) zb[j] = static_cast<float>(bzp.z(j));
  for (int64_t mat = 0; mat < b.num_elements() / kn; ++mat) {
    std::fill(colsum.begin(), colsum.end(), 0.0f);
    for (int64_t k = 0; k < p.k; ++k) {
      float* row = out->values.data() + mat * kn + k * p.n;
      quantize_internal::CenteredFloats(b, mat * kn + k * p.n, p.n, 0, row);
      for (int64_t j = 0; j < p.n; ++j) {
        row[j] -= zb[j];
        colsum[j] += std::fabs(row[j]);
      }
    }
    out->worst_abs_sum =
        std::max(out->worst_abs_sum, *std::max_element(colsum.begin(), colsum.end()));
  }
  return out;
}

// IntegerMatMul's sums through the float GEMM when that is exact
// (kFloatExactBound: the largest |a - azp| times every column's
// sum_k |b - bzp| stays below 2^24, as for an int8 classifier), false when
// it is not or would not be faster (FloatProductsAreFast). `constant_b`: B
// and its zero point are initializers, so centred B is kept in the node's
// cache.
absl::StatusOr<bool> FloatExactMatMul(KernelContext& ctx, const RtTensor& a, const RtTensor& b,
                                      const MatMulShape& p, const QParams& azp,
                                      const QParams& bzp, bool constant_b,
                                      std::vector<int32_t>& acc) {
  const int64_t mk = p.m * p.k, kn = p.k * p.n, mn = p.m * p.n;
  // The integer path handles empty shapes, and CPUs without hardware FMA.
  if (mk == 0 || kn == 0 || !quantize_internal::FloatProductsAreFast()) return false;
  ASSIGN_OR_RETURN(RtTensor af, ctx.AllocateUninitialized(DType::kF32, {a.num_elements()}));
  float* pa = af.mutable_data<float>();
  float amax = 0;
  for (int64_t r = 0; r < a.num_elements() / p.k; ++r) {
    float* row = pa + r * p.k;
    quantize_internal::CenteredFloats(a, r * p.k, p.k, azp.z(r % p.m), row);
    for (int64_t k = 0; k < p.k; ++k) amax = std::max(amax, std::fabs(row[k]));
  }
  const std::shared_ptr<const quantize_internal::CentredWeights> cb =
      quantize_internal::Prepared(ctx, constant_b, [&] { return CentreMatMulB(b, p, bzp); });
  if (static_cast<double>(cb->worst_abs_sum) * amax >=
      static_cast<double>(quantize_internal::kFloatExactBound)) {
    ctx.Recycle(std::move(af));
    return false;
  }
  const auto batches = static_cast<int64_t>(p.a_off.size());
  ASSIGN_OR_RETURN(RtTensor c, ctx.AllocateUninitialized(DType::kF32, {batches * mn}));
  float* pc = c.mutable_data<float>();
  const float* pb = cb->values.data();
  for (int64_t o = 0; o < batches; ++o) {
    RETURN_IF_ERROR(Sgemm(false, false, p.m, p.n, p.k, 1.0f, pa + p.a_off[o] * mk, p.k,
                          pb + p.b_off[o] * kn, p.n, 0.0f, pc + o * mn, p.n, ctx.pool()));
  }
  acc.resize(batches * mn);
  for (int64_t i = 0; i < batches * mn; ++i) acc[i] = static_cast<int32_t>(pc[i]);
  ctx.Recycle(std::move(af));
  ctx.Recycle(std::move(c));
  return true;
}

// The integer sums of a matmul from the fastest exact path here: the byte
// dot products where the CPU has them, else the float GEMM where it is
// exact, else IntegerMatMul (all the same int32 values).
absl::StatusOr<std::vector<int32_t>> MatMulProducts(KernelContext& ctx, const RtTensor& a,
                                                    const RtTensor& b, const MatMulShape& p,
                                                    const QParams& azp, const QParams& bzp,
                                                    bool constant_b) {
  std::vector<int32_t> acc;
  if (int8dot::Fast() && p.m > 0 && p.n > 0 && p.k > 0) {
    const std::shared_ptr<const DotMatMulWeights> db = quantize_internal::Prepared(
        ctx, constant_b, [&] { return PrepareDotMatMulWeights(b, p.k, p.n, bzp); });
    acc.resize(p.a_off.size() * p.m * p.n);
    DotMatMul(a, p.m, azp, *db, p.a_off, p.b_off, ctx.pool(), acc.data());
    return acc;
  }
  ASSIGN_OR_RETURN(bool exact, FloatExactMatMul(ctx, a, b, p, azp, bzp, constant_b, acc));
  if (!exact) acc = IntegerMatMul(IntsOf(a), IntsOf(b), p, azp, bzp, ctx.pool());
  return acc;
}

}  // namespace

absl::Status MatMulInteger(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(1));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *a));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *b));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 2, a->dtype()));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 3, b->dtype()));
  ASSIGN_OR_RETURN(MatMulShape p, PlanMatMul(*a, *b));
  ASSIGN_OR_RETURN(QParams azp, ReadQParams(ctx, -1, 2, p.m, "a_zero_point"));
  ASSIGN_OR_RETURN(QParams bzp, ReadQParams(ctx, -1, 3, p.n, "b_zero_point"));
  ASSIGN_OR_RETURN(std::vector<int32_t> acc,
                   MatMulProducts(ctx, *a, *b, p, azp, bzp,
                                  ctx.input_is_constant(1) && ConstantOrAbsent(ctx, 3)));
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(DType::kI32, p.out_dims));
  std::copy(acc.begin(), acc.end(), y.mutable_data<int32_t>());
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

absl::Status QLinearMatMul(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(3));
  ASSIGN_OR_RETURN(const RtTensor* yz, ctx.RequiredInput(7));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *a));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *b));
  RETURN_IF_ERROR(ExpectQuantInput(ctx, *yz));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 2, a->dtype()));
  RETURN_IF_ERROR(ExpectZeroPointType(ctx, 5, b->dtype()));
  ASSIGN_OR_RETURN(MatMulShape p, PlanMatMul(*a, *b));
  // a and y: per tensor or per row; b: per tensor or per column.
  ASSIGN_OR_RETURN(QParams qa, ReadQParams(ctx, 1, 2, p.m, "a"));
  ASSIGN_OR_RETURN(QParams qb, ReadQParams(ctx, 4, 5, p.n, "b"));
  ASSIGN_OR_RETURN(QParams qy, ReadQParams(ctx, 6, 7, p.m, "y"));
  ASSIGN_OR_RETURN(std::vector<int32_t> acc,
                   MatMulProducts(ctx, *a, *b, p, qa, qb,
                                  ctx.input_is_constant(3) && ConstantOrAbsent(ctx, 5)));
  const DType out_type = yz->dtype();
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(out_type, p.out_dims));
  // Row by row: scale in floats, then round and saturate four at a time
  // (y is u8 or i8: ExpectQuantInput above).
  std::vector<float> scaled(p.n);
  uint8_t* py = y.mutable_data<uint8_t>();
  const int64_t rows = static_cast<int64_t>(acc.size()) / std::max<int64_t>(p.n, 1);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r % p.m;
    for (int64_t col = 0; col < p.n; ++col) {
      const float mult = qa.s(row) * qb.s(col) / qy.s(row);
      scaled[col] = static_cast<float>(acc[r * p.n + col]) * mult;
    }
    quantize_internal::SaturateRoundBytes(scaled.data(), p.n, qy.z(row), out_type, py + r * p.n);
  }
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
