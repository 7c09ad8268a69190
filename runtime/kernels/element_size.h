// Data-movement kernels copy elements without looking at them: dispatch on
// the element's byte size to an unsigned integer type of that size.
#ifndef SLIMPACK_RUNTIME_KERNELS_ELEMENT_SIZE_H_
#define SLIMPACK_RUNTIME_KERNELS_ELEMENT_SIZE_H_

#include <cstdint>

#include "runtime/kernel.h"

namespace slimpack::runtime {

// Calls f(T{}) with T = uint8_t/uint16_t/uint32_t/uint64_t matching the
// size of `dtype`; Unimplemented for packed 4-bit types.
template <typename F>
absl::Status ForElementSize(const KernelContext& ctx, ir::DType dtype, F&& f) {
  switch (ir::DTypeBits(dtype)) {
    case 8: return f(uint8_t{});
    case 16: return f(uint16_t{});
    case 32: return f(uint32_t{});
    case 64: return f(uint64_t{});
    default:
      return UnsupportedDType(ctx, dtype, "dtypes of 1, 2, 4 or 8 bytes");
  }
}

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_KERNELS_ELEMENT_SIZE_H_
