// Internal: the RTN row driver shared by the scalar and AVX2 kernels,
// parameterised by the element operations `Ops`:
//   static bool MinMax(const float* x, int64_t n, float* mn, float* mx);
//       (false when x holds inf/NaN)
//   static float Error(const float* x, const float* imp, int64_t n,
//                      const GroupGrid& g);
//   static void Quantize(const float* x, int64_t n, const GroupGrid& g,
//                        int8_t* q);
//   static constexpr bool kGrids8;  and, when true,
//   static void Grids8(const float mn[8], const float mx[8], const RowJob& j,
//                      GroupGrid out[8]);  (MakeGrid of each, ratio 1)
// Included only by rtn_kernel_scalar.cc and rtn_kernel_avx2.cc.
#ifndef SLIMPACK_QUANTIZE_NUMERICS_RTN_KERNEL_IMPL_H_
#define SLIMPACK_QUANTIZE_NUMERICS_RTN_KERNEL_IMPL_H_

#include <algorithm>
#include <cmath>

#include "quantize/numerics/rtn_kernel.h"

namespace slimpack::quant::internal {

template <class Ops>
bool QuantizeRowImpl(const RowJob& j) {
  const int64_t ngroups = (j.cols + j.group - 1) / j.group;
  // Ratios 1 - k/clip_grid for k = 1 .. steps-1 (k = 0 is the plain grid).
  const int steps = j.search
      ? static_cast<int>(std::ceil(static_cast<double>(j.clip_grid) *
                                   j.clip_max_shrink))
      : 0;
  int64_t g = 0;
  if constexpr (Ops::kGrids8) {
    // Without a clip search, eight groups' grids at a time (the same
    // arithmetic as MakeGrid's, lane by lane): one grid per group at a time
    // cost as much as quantizing a 32-weight group.
    if (steps <= 1) {
      for (; g + 8 <= ngroups; g += 8) {
        float mn[8], mx[8];
        for (int k = 0; k < 8; ++k) {
          const int64_t c0 = (g + k) * j.group;
          if (!Ops::MinMax(j.w + c0, std::min(j.group, j.cols - c0), &mn[k], &mx[k])) {
            return false;
          }
        }
        GroupGrid grids[8];
        Ops::Grids8(mn, mx, j, grids);
        for (int k = 0; k < 8; ++k) {
          const int64_t c0 = (g + k) * j.group;
          Ops::Quantize(j.w + c0, std::min(j.group, j.cols - c0), grids[k], j.q + c0);
          j.scale[g + k] = grids[k].scale;
          if (j.zero) j.zero[g + k] = static_cast<int8_t>(grids[k].zero);
        }
      }
    }
  }
  for (; g < ngroups; ++g) {
    const int64_t c0 = g * j.group;
    const int64_t n = std::min(j.group, j.cols - c0);
    const float* x = j.w + c0;
    float mn, mx;
    if (!Ops::MinMax(x, n, &mn, &mx)) return false;
    GroupGrid best = MakeGrid(mn, mx, 1.0f, j.bits, j.symmetric, j.restricted, j.scale_dtype);
    if (steps > 1) {
      const float* imp = j.importance ? j.importance + c0 : nullptr;
      float best_err = Ops::Error(x, imp, n, best);
      for (int k = 1; k < steps; ++k) {
        const float ratio =
            1.0f - static_cast<float>(k) / static_cast<float>(j.clip_grid);
        const GroupGrid cand = MakeGrid(mn, mx, ratio, j.bits, j.symmetric, j.restricted,
                                         j.scale_dtype);
        const float err = Ops::Error(x, imp, n, cand);
        if (err < best_err) {
          best_err = err;
          best = cand;
        }
      }
    }
    Ops::Quantize(x, n, best, j.q + c0);
    j.scale[g] = best.scale;
    if (j.zero) j.zero[g] = static_cast<int8_t>(best.zero);
  }
  return true;
}

// The fixed reduction of 8 lane accumulators both kernels use.
inline float ReduceLanes(const float a[8]) {
  return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

}  // namespace slimpack::quant::internal

#endif  // SLIMPACK_QUANTIZE_NUMERICS_RTN_KERNEL_IMPL_H_
