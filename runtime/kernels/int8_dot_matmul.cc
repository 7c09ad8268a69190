// See int8_dot_ops.h: MatMulInteger / QLinearMatMul's sums through the byte
// dot products (the convolutions are in int8_dot_ops.cc).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/kernels/int8_dot.h"
#include "runtime/kernels/int8_dot_bytes.h"
#include "runtime/kernels/int8_dot_ops.h"

namespace slimpack::runtime::kernels {

using dot_bytes::AsSigned;
using dot_bytes::AsUnsigned;
using dot_bytes::RoundUp;
using dot_bytes::U;
using ir::DType;

std::shared_ptr<const DotMatMulWeights> PrepareDotMatMulWeights(
    const RtTensor& b, int64_t k, int64_t n, const quantize_internal::QParams& bzp) {
  auto out = std::make_shared<DotMatMulWeights>();
  const bool is_signed = b.dtype() == DType::kI8;
  out->k = k;
  out->n = n;
  out->kq = (k + 3) / 4;
  out->pcols = RoundUp(n, 16);
  out->matrices = k * n == 0 ? 0 : b.num_elements() / (k * n);
  const int64_t per = out->kq * out->pcols * 4;
  out->panel.assign(out->matrices * per, 0);
  out->zp.resize(n);
  for (int64_t j = 0; j < n; ++j) out->zp[j] = is_signed ? bzp.z(j) : bzp.z(j) - 128;
  out->sum.assign(out->matrices * n, 0);
  const auto* src = b.data<uint8_t>();
  for (int64_t mat = 0; mat < out->matrices; ++mat) {
    uint8_t* panel = out->panel.data() + mat * per;
    int32_t* sum = out->sum.data() + mat * n;
    for (int64_t kk = 0; kk < k; ++kk) {
      const uint8_t* row = src + (mat * k + kk) * n;
      uint8_t* dst = panel + (kk / 4) * out->pcols * 4 + kk % 4;
      for (int64_t j = 0; j < n; ++j) {
        const uint8_t v = AsSigned(row[j], is_signed);
        dst[4 * j] = v;
        sum[j] = static_cast<int32_t>(U(sum[j]) + U(static_cast<int8_t>(v)));
      }
    }
  }
  return out;
}

void DotMatMul(const RtTensor& a, int64_t m, const quantize_internal::QParams& azp,
               const DotMatMulWeights& b, const std::vector<int64_t>& a_off,
               const std::vector<int64_t>& b_off, ThreadPool* pool, int32_t* acc) {
  const bool a_signed = a.dtype() == DType::kI8;
  const int64_t k = b.k, n = b.n, ldr = 4 * b.kq;
  const int64_t a_rows = k == 0 ? 0 : a.num_elements() / k;
  // A's rows as unsigned bytes, k padded with zeros, and their sums.
  std::vector<uint8_t> rows(a_rows * ldr, 0);
  std::vector<uint32_t> rsum(a_rows, 0);
  const auto* src = a.data<uint8_t>();
  for (int64_t r = 0; r < a_rows; ++r) {
    uint32_t s = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const uint8_t v = AsUnsigned(src[r * k + kk], a_signed);
      rows[r * ldr + kk] = v;
      s += v;
    }
    rsum[r] = s;
  }
  // Tasks of up to 16 rows x 256 columns of one output matrix.
  constexpr int64_t kRows = 16, kCols = 256;
  const int64_t rblocks = (m + kRows - 1) / kRows, cblocks = (n + kCols - 1) / kCols;
  const int64_t per = b.kq * b.pcols * 4;
  const auto batches = static_cast<int64_t>(a_off.size());
  ParallelFor(pool, batches * rblocks * cblocks, [&](int64_t task) {
    const int64_t cb = task % cblocks, rb = (task / cblocks) % rblocks;
    const int64_t bi = task / (cblocks * rblocks);
    const int64_t r0 = rb * kRows, rn = std::min(kRows, m - r0);
    const int64_t c0 = cb * kCols, cn = std::min(kCols, n - c0);
    const int64_t arow0 = a_off[bi] * m + r0;
    int32_t* out = acc + (bi * m + r0) * n + c0;
    int8dot::Dot({rn, cn, b.kq, rows.data() + arow0 * ldr, ldr,
                  b.panel.data() + b_off[bi] * per + c0 * 4, b.pcols,
                  /*signed_rows=*/false, out, n});
    const int32_t* bsum = b.sum.data() + b_off[bi] * n + c0;
    for (int64_t r = 0; r < rn; ++r) {
      const uint32_t za = U(a_signed ? azp.z(r0 + r) + 128 : azp.z(r0 + r));
      const uint32_t sa = rsum[arow0 + r];
      int32_t* row = out + r * n;
      for (int64_t j = 0; j < cn; ++j) {
        const uint32_t zb = U(b.zp[c0 + j]);
        row[j] = static_cast<int32_t>(U(row[j]) - zb * sa - za * U(bsum[j]) + U(k) * za * zb);
      }
    }
  });
}

}  // namespace slimpack::runtime::kernels
