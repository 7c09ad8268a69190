#include "ir/dtype.h"

#include "support/checked_math.h"

namespace slimpack::ir {
namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  int bits;
};

constexpr DTypeInfo kInfos[] = {
    {DType::kUndefined, "undefined", 0}, {DType::kF32, "f32", 32},
    {DType::kF16, "f16", 16},            {DType::kBF16, "bf16", 16},
    {DType::kF64, "f64", 64},            {DType::kI64, "i64", 64},
    {DType::kI32, "i32", 32},            {DType::kI16, "i16", 16},
    {DType::kI8, "i8", 8},               {DType::kU64, "u64", 64},
    {DType::kU32, "u32", 32},            {DType::kU16, "u16", 16},
    {DType::kU8, "u8", 8},               {DType::kBool, "bool", 8},
    {DType::kI4, "i4", 4},               {DType::kU4, "u4", 4},
};

const DTypeInfo& Info(DType t) {
  for (const auto& info : kInfos) {
    if (info.type == t) return info;
  }
  return kInfos[0];
}

}  // namespace

int DTypeBits(DType t) { return Info(t).bits; }
std::string_view DTypeName(DType t) { return Info(t).name; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const auto& info : kInfos) {
    if (info.type != DType::kUndefined && name == info.name) return info.type;
  }
  return std::nullopt;
}

bool IsFloat(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 ||
         t == DType::kF64;
}

std::optional<uint64_t> DTypeByteSize(DType t, uint64_t numel) {
  int bits = DTypeBits(t);
  if (bits == 0) return std::nullopt;
  auto total_bits = CheckedMul(numel, static_cast<uint64_t>(bits));
  if (!total_bits) return std::nullopt;
  return (*total_bits + 7) / 8;
}

}  // namespace slimpack::ir
