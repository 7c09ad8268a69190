// Round-to-nearest weight quantization, optionally with a per-group
// clip-ratio search minimising (importance-weighted) squared error, as
// llama.cpp's imatrix quantizers and AWQ's clip search do.
//
// Per group: min/max -> grid (quant_types.h MakeGrid) -> codes. With the
// search, ratios 1, 1 - 1/grid, ... (down to 1 - max_shrink, exclusive) are
// tried and the first ratio with the least sum_i imp[c_i] * (w_i - deq_i)^2
// wins. Errors are summed in float in a fixed order (8 interleaved lanes,
// then a fixed tree, then the tail) so the AVX2 kernel and the scalar
// reference choose identically and produce bit-identical output.
// Rows are independent, so the result does not depend on `threads`.
#ifndef SLIMPACK_QUANTIZE_NUMERICS_RTN_H_
#define SLIMPACK_QUANTIZE_NUMERICS_RTN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "quantize/numerics/quant_types.h"

namespace slimpack::quant {

struct RtnOptions {
  // Per-group clip-ratio grid search minimising (importance-weighted)
  // squared error.
  bool mse_clip = false;
  // Per-column weights (len cols; e.g. calibration mean x^2, llama.cpp
  // imatrix style) or null (all 1). Non-null implies the clip search.
  const float* importance = nullptr;
  // Symmetric codes in [-(2^(b-1)-1), 2^(b-1)-1] with a positive scale
  // max|w| / (2^(b-1)-1) (quant_types.h MakeGrid `restricted`).
  bool restricted_range = false;
  int threads = 1;
  int clip_grid = 20;           // ratio step 1/clip_grid
  float clip_max_shrink = 0.5f; // ratios > 1 - clip_max_shrink
  // Kernel choice: kAuto = AVX2 when the CPU has it, else scalar.
  enum class Kernel { kAuto, kScalar, kAvx2 } kernel = Kernel::kAuto;
};

// Quantizes row-major w[rows, cols]. InvalidArgument for a bad scheme
// (ValidateScheme), rows/cols < 1, a null pointer, non-finite or negative
// importance, or a non-finite weight (naming row, col and value);
// Unimplemented when Kernel::kAvx2 is requested on a CPU without AVX2.
absl::StatusOr<QuantizedMatrix> QuantizeRtn(const float* w, int64_t rows,
                                            int64_t cols, const Scheme& scheme,
                                            const RtnOptions& options);

// QuantizeRtn into `out`, whose vectors keep their memory when they already
// hold the sizes the result needs: a caller quantizing a weight block by
// block reuses one matrix instead of allocating and zeroing a megabyte of
// codes per block (fresh pages cost more than the quantizing on our VMs).
// The same codes, scales and errors as QuantizeRtn; on error `out` is
// unspecified.
absl::Status QuantizeRtnInto(const float* w, int64_t rows, int64_t cols, const Scheme& scheme,
                             const RtnOptions& options, QuantizedMatrix* out);

// True when this CPU runs the AVX2 kernel.
bool RtnHasAvx2();

}  // namespace slimpack::quant

#endif  // SLIMPACK_QUANTIZE_NUMERICS_RTN_H_
