// RTN driver: validation, kernel dispatch, row-block threading.
#include "quantize/numerics/rtn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/float_convert.h"
#include "quantize/numerics/rtn_kernel.h"
#include "support/cpu_features.h"
#include "support/status_macros.h"
#include "support/threads.h"

namespace slimpack::quant {

bool RtnHasAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  // F16C for the f16 scales (every AVX2 CPU has it).
  __builtin_cpu_init();
  return ir::CpuHasF16c() && support::CpuAllows(support::CpuFeature::kAvx2Fma);
#else
  return false;
#endif
}

namespace {

absl::Status NonFiniteError(const float* row, int64_t r, int64_t cols) {
  for (int64_t c = 0; c < cols; ++c) {
    if (!std::isfinite(row[c])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RTN: weight at row ", r, " col ", c, " is ", row[c],
          " (non-finite weights cannot be quantized)"));
    }
  }
  return absl::InternalError(
      absl::StrCat("RTN: row ", r, " reported non-finite but none found"));
}

}  // namespace

absl::StatusOr<QuantizedMatrix> QuantizeRtn(const float* w, int64_t rows,
                                            int64_t cols, const Scheme& scheme,
                                            const RtnOptions& options) {
  QuantizedMatrix m;
  RETURN_IF_ERROR(QuantizeRtnInto(w, rows, cols, scheme, options, &m));
  return m;
}

absl::Status QuantizeRtnInto(const float* w, int64_t rows, int64_t cols, const Scheme& scheme,
                             const RtnOptions& options, QuantizedMatrix* out) {
  if (rows < 1 || cols < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RTN: matrix must be at least 1x1, got ", rows, "x", cols));
  }
  if (w == nullptr) return absl::InvalidArgumentError("RTN: null weights");
  if (absl::Status s = ValidateScheme(scheme, cols); !s.ok()) return s;
  if (options.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("RTN: threads ", options.threads, " < 1"));
  }
  const bool search = options.mse_clip || options.importance != nullptr;
  if (search && (options.clip_grid < 1 || !(options.clip_max_shrink >= 0.0f) ||
                 options.clip_max_shrink >= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RTN: clip search needs clip_grid >= 1 and clip_max_shrink in [0, 1),"
        " got ", options.clip_grid, " and ", options.clip_max_shrink));
  }
  if (options.importance) {
    for (int64_t c = 0; c < cols; ++c) {
      const float v = options.importance[c];
      if (!std::isfinite(v) || v < 0.0f) {
        return absl::InvalidArgumentError(absl::StrCat(
            "RTN: importance of column ", c, " is ", v,
            " (must be finite and >= 0)"));
      }
    }
  }
  bool use_avx2 = false;
  switch (options.kernel) {
    case RtnOptions::Kernel::kAuto: use_avx2 = RtnHasAvx2(); break;
    case RtnOptions::Kernel::kScalar: use_avx2 = false; break;
    case RtnOptions::Kernel::kAvx2:
      if (!RtnHasAvx2()) {
        return absl::UnimplementedError(
            "RTN: AVX2 kernel requested but this CPU lacks AVX2/FMA/F16C "
            "(supported: scalar, auto)");
      }
      use_avx2 = true;
      break;
  }

  QuantizedMatrix& m = *out;
  m.rows = rows;
  m.cols = cols;
  m.scheme = scheme;
  const int64_t ng = m.num_groups();
  // Every code, scale and zero point is written below (a row that fails
  // fails the whole call), so kept memory need not be cleared.
  m.q.resize(static_cast<size_t>(rows * cols));
  m.scale.resize(static_cast<size_t>(rows * ng));
  m.zero.resize(scheme.symmetric ? 0 : static_cast<size_t>(rows * ng));

  internal::RowJob base;
  base.cols = cols;
  base.group = m.group_size();
  base.bits = scheme.bits;
  base.symmetric = scheme.symmetric;
  base.restricted = options.restricted_range;
  base.scale_dtype = scheme.scale_dtype;
  base.importance = options.importance;
  base.search = search;
  base.clip_grid = options.clip_grid;
  base.clip_max_shrink = options.clip_max_shrink;
  auto* kernel = use_avx2 ? &internal::QuantizeRowAvx2
                          : &internal::QuantizeRowScalar;

  // Contiguous row blocks; each row is independent, so the output does not
  // depend on the split. The smallest bad row is reported.
  const int64_t nthreads =
      std::max<int64_t>(1, std::min<int64_t>(options.threads, rows));
  const int64_t block = (rows + nthreads - 1) / nthreads;
  std::vector<int64_t> bad(static_cast<size_t>(nthreads), -1);
  auto work = [&](int64_t t) {
    const int64_t r1 = std::min(rows, (t + 1) * block);
    for (int64_t r = t * block; r < r1; ++r) {
      internal::RowJob j = base;
      j.w = w + r * cols;
      j.q = m.q.data() + r * cols;
      j.scale = m.scale.data() + r * ng;
      j.zero = scheme.symmetric ? nullptr : m.zero.data() + r * ng;
      if (!kernel(j)) {
        bad[static_cast<size_t>(t)] = r;
        return;
      }
    }
  };
  // Blocks whose thread the system refuses run on this thread.
  support::RunOnThreads(nthreads, work);
  for (int64_t r : bad) {
    if (r >= 0) return NonFiniteError(w + r * cols, r, cols);
  }
  return absl::OkStatus();
}

}  // namespace slimpack::quant
