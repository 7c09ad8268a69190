// Byte conversions and modular arithmetic shared by the byte dot product
// ops (int8_dot_ops.cc: convolutions; int8_dot_matmul.cc: matmuls).
// Compiled with the baseline flags only (not for the ISA-specific kernels).
#ifndef SLIMPACK_RUNTIME_KERNELS_INT8_DOT_BYTES_H_
#define SLIMPACK_RUNTIME_KERNELS_INT8_DOT_BYTES_H_

#include <cstdint>

namespace slimpack::runtime::kernels::dot_bytes {

// A u8 / i8 value as the unsigned byte the instruction reads (i8 + 128).
inline uint8_t AsUnsigned(uint8_t bits, bool is_signed) {
  return is_signed ? static_cast<uint8_t>(bits ^ 0x80) : bits;
}
// A u8 / i8 value as the signed byte (u8 - 128), as its bit pattern.
inline uint8_t AsSigned(uint8_t bits, bool is_signed) {
  return is_signed ? bits : static_cast<uint8_t>(bits ^ 0x80);
}

// The value mod 2^32, for sums that wrap as int32 accumulators do.
inline uint32_t U(int64_t v) { return static_cast<uint32_t>(v); }

constexpr int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

}  // namespace slimpack::runtime::kernels::dot_bytes

#endif  // SLIMPACK_RUNTIME_KERNELS_INT8_DOT_BYTES_H_
