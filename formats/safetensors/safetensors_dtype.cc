#include "formats/safetensors/safetensors_dtype.h"

#include "absl/status/status.h"

namespace slimpack::safetensors {
namespace {

struct DTypeName {
  const char* name;
  ir::DType type;
};

// Sorted by name so SupportedSafetensorsDTypes() reads well.
constexpr DTypeName kSupported[] = {
    {"BF16", ir::DType::kBF16}, {"BOOL", ir::DType::kBool},
    {"F16", ir::DType::kF16},   {"F32", ir::DType::kF32},
    {"F64", ir::DType::kF64},   {"I16", ir::DType::kI16},
    {"I32", ir::DType::kI32},   {"I64", ir::DType::kI64},
    {"I8", ir::DType::kI8},     {"U16", ir::DType::kU16},
    {"U32", ir::DType::kU32},   {"U64", ir::DType::kU64},
    {"U8", ir::DType::kU8},
};

// Defined by the safetensors format but without an IR equivalent yet.
constexpr const char* kKnownUnsupported[] = {
    "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2",
    "F4",      "E8M0",    "C64",     "C128",
};

}  // namespace

absl::StatusOr<ir::DType> ParseSafetensorsDType(std::string_view name) {
  for (const auto& d : kSupported) {
    if (name == d.name) return d.type;
  }
  for (const char* n : kKnownUnsupported) {
    if (name == n) {
      return absl::UnimplementedError("dtype '" + std::string(name) +
                                      "' is not supported (supported: " +
                                      SupportedSafetensorsDTypes() + ")");
    }
  }
  return absl::InvalidArgumentError(
      "unknown dtype '" + std::string(name) +
      "' (supported: " + SupportedSafetensorsDTypes() + ")");
}

std::optional<std::string_view> SafetensorsDTypeName(ir::DType t) {
  for (const auto& d : kSupported) {
    if (d.type == t) return d.name;
  }
  return std::nullopt;
}

std::string SupportedSafetensorsDTypes() {
  std::string s;
  for (const auto& d : kSupported) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}

}  // namespace slimpack::safetensors
