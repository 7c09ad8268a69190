// Internal: the per-row RTN kernels (scalar reference and AVX2) behind
// rtn.h. Both instantiate the same driver (rtn_kernel_impl.h) with different
// element operations and must produce bit-identical results.
#ifndef SLIMPACK_QUANTIZE_NUMERICS_RTN_KERNEL_H_
#define SLIMPACK_QUANTIZE_NUMERICS_RTN_KERNEL_H_

#include <cstdint>

#include "quantize/numerics/quant_types.h"

namespace slimpack::quant::internal {

struct RowJob {
  const float* w = nullptr;    // one row, cols floats
  int64_t cols = 0;
  int64_t group = 0;           // effective group size (>= 1)
  int bits = 4;
  bool symmetric = true;
  bool restricted = false;     // MakeGrid's restricted symmetric range
  ScaleDType scale_dtype = ScaleDType::kF32;  // MakeGrid's stored scale
  const float* importance = nullptr;  // cols weights, or null
  bool search = false;
  int clip_grid = 20;
  float clip_max_shrink = 0.5f;
  int8_t* q = nullptr;         // cols codes out
  float* scale = nullptr;      // groups out
  int8_t* zero = nullptr;      // groups out, or null when symmetric
};

// Quantize one row. Returns false (row left partially written) when the row
// holds a non-finite value; the caller locates and reports it.
bool QuantizeRowScalar(const RowJob& job);
bool QuantizeRowAvx2(const RowJob& job);

// Sum over i of imp[i] * (x[i] - deq(q(x[i])))^2 (imp null: 1) in the fixed
// order both kernels use. Exposed for AWQ's clip search and tests.
float GroupErrorScalar(const float* x, const float* imp, int64_t n,
                       const GroupGrid& g);

}  // namespace slimpack::quant::internal

#endif  // SLIMPACK_QUANTIZE_NUMERICS_RTN_KERNEL_H_
