// Float format conversions between f32, f16 and bf16 with IEEE
// round-to-nearest-even, used to store weights in a smaller float type.
// Overflow rounds to infinity, underflow to (signed) zero or a subnormal;
// infinities are kept and NaNs stay NaN (sign and top payload bits kept,
// quiet bit set when narrowing, as x86 F16C and Arm FCVT do).
#ifndef SLIMPACK_IR_FLOAT_CONVERT_H_
#define SLIMPACK_IR_FLOAT_CONVERT_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "ir/dtype.h"

namespace slimpack::ir {

uint16_t F32ToF16(float f);
float F16ToF32(uint16_t h);  // exact
uint16_t F32ToBf16(float f);
float Bf16ToF32(uint16_t b);  // exact
// OCP 8-bit float E4M3 ("E4M3FN", safetensors F8_E4M3; spec.md,
// "fp8_e4m3_groupwise"): bias 7, subnormals, no infinities, 0x7F / 0xFF
// NaN. Exact.
float F8E4M3ToF32(uint8_t q);

// The CPU (and OS) can run F16C's conversions on YMM registers; false off
// x86. ConvertFloats uses them then, as does the RTN kernel for f16 scales.
bool CpuHasF16c();

// True for the dtypes these functions convert between.
bool IsConvertibleFloat(ir::DType t);

// Converts `numel` little-endian elements from `from` at `src` to `to` at
// `dst` (unaligned pointers are fine; src and dst must not overlap).
// f16 <-> bf16 goes through f32, which is exact, so it rounds once.
// Unimplemented naming both dtypes if either is not f32/f16/bf16.
absl::Status ConvertFloats(ir::DType from, const uint8_t* src, ir::DType to,
                           uint8_t* dst, uint64_t numel);

namespace internal {
// The portable f32 -> f16 loop; ConvertFloats uses F16C when the CPU has it.
// Tests check both give identical bits.
void F32ToF16Scalar(const uint8_t* src, uint8_t* dst, uint64_t numel);
void F32ToF16Fast(const uint8_t* src, uint8_t* dst, uint64_t numel);
}  // namespace internal

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_FLOAT_CONVERT_H_
