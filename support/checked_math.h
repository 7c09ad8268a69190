// Overflow-checked arithmetic for sizes read from files (bad-inputs.md #6, #7).
#ifndef SLIMPACK_SUPPORT_CHECKED_MATH_H_
#define SLIMPACK_SUPPORT_CHECKED_MATH_H_

#include <cstdint>
#include <optional>

namespace slimpack {

inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Signed variants for int64 sizes and attribute values (ONNX strides,
// pads, dims): nullopt when the exact result does not fit in int64_t.
inline std::optional<int64_t> CheckedMulInt64(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> CheckedAddInt64(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> CheckedSubInt64(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Rounds `x` up to a multiple of `align` (a power of two); nullopt on wrap.
inline std::optional<uint64_t> CheckedAlignUp(uint64_t x, uint64_t align) {
  if (x > UINT64_MAX - (align - 1)) return std::nullopt;
  return (x + align - 1) & ~(align - 1);
}

}  // namespace slimpack

#endif  // SLIMPACK_SUPPORT_CHECKED_MATH_H_
