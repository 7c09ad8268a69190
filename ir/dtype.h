// Element types of the graph IR. Packed 4-bit types store two elements per
// byte, element 0 in the low nibble (the ONNX int4 convention).
#ifndef SLIMPACK_IR_DTYPE_H_
#define SLIMPACK_IR_DTYPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace slimpack::ir {

enum class DType : uint8_t {
  kUndefined = 0,
  kF32,
  kF16,
  kBF16,
  kF64,
  kI64,
  kI32,
  kI16,
  kI8,
  kU64,
  kU32,
  kU16,
  kU8,
  kBool,
  kI4,  // packed, two per byte
  kU4,  // packed, two per byte
};

// Bits per element (4 for the packed types, 0 for kUndefined).
int DTypeBits(DType t);
// Lower-case short name: "f32", "bf16", "i4", ...
std::string_view DTypeName(DType t);
// Inverse of DTypeName.
std::optional<DType> DTypeFromName(std::string_view name);
bool IsFloat(DType t);

// Bytes needed to store `numel` elements; nullopt on overflow.
std::optional<uint64_t> DTypeByteSize(DType t, uint64_t numel);

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_DTYPE_H_
