// Mapping between safetensors dtype strings ("BF16", "F32", ...) and the IR's
// DType, shared by the reader and the writer.
#ifndef SLIMPACK_FORMATS_SAFETENSORS_SAFETENSORS_DTYPE_H_
#define SLIMPACK_FORMATS_SAFETENSORS_SAFETENSORS_DTYPE_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/dtype.h"

namespace slimpack::safetensors {

// The IR dtype for a safetensors dtype string. Returns Unimplemented for
// dtypes the format defines but we do not support (F8_E4M3, F8_E5M2, C64,
// ...) and InvalidArgument for strings the format does not define; both
// messages list the supported names.
absl::StatusOr<ir::DType> ParseSafetensorsDType(std::string_view name);

// The safetensors name of an IR dtype; nullopt for types the format cannot
// hold (packed 4-bit, undefined).
std::optional<std::string_view> SafetensorsDTypeName(ir::DType t);

// "BF16, BOOL, F16, ..." for error messages.
std::string SupportedSafetensorsDTypes();

}  // namespace slimpack::safetensors

#endif  // SLIMPACK_FORMATS_SAFETENSORS_SAFETENSORS_DTYPE_H_
