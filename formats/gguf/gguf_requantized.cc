#include "formats/gguf/gguf_requantized.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace slimpack::gguf {

absl::StatusOr<std::vector<RequantizedTensor>> ReadRequantizedTensors(const GgufFile& file) {
  // absl::StrCat of this Abseil takes no std::string_view.
  const std::string names_key(kRequantizedTensorsKey), errors_key(kRequantizedRelL2Key);
  const Value* names = file.FindValue(kRequantizedTensorsKey);
  const Value* errors = file.FindValue(kRequantizedRelL2Key);
  if (names == nullptr && errors == nullptr) return std::vector<RequantizedTensor>{};
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(file.label, ": ", what));
  };
  if (names == nullptr || errors == nullptr) {
    return bad(absl::StrCat("metadata '", names ? names_key : errors_key,
                            "' without '", names ? errors_key : names_key,
                            "'"));
  }
  if (!names->is_array() || names->element_type() != ValueType::kString) {
    return bad(absl::StrCat("metadata '", names_key, "' is ", names->Describe(),
                            ", expected an array of strings"));
  }
  if (!errors->is_array() || errors->element_type() != ValueType::kF32) {
    return bad(absl::StrCat("metadata '", errors_key, "' is ", errors->Describe(),
                            ", expected an array of f32"));
  }
  if (names->size() != errors->size()) {
    return bad(absl::StrCat("metadata '", names_key, "' names ", names->size(),
                            " tensors but '", errors_key, "' has ", errors->size(),
                            " values"));
  }
  std::vector<RequantizedTensor> out;
  for (uint64_t i = 0; i < names->size(); ++i) {
    const std::string_view name = *names->GetString(i);
    const TensorInfo* t = file.FindTensor(name);
    if (t == nullptr) {
      return bad(absl::StrCat("metadata '", names_key, "' names tensor '", std::string(name),
                              "', which the file does not hold"));
    }
    const double rel = *errors->GetFloat(i);
    // +inf is an error that overflowed (weights past f16's range): shown.
    if (!(rel >= 0)) {
      return bad(absl::StrCat("metadata '", errors_key, "' gives tensor '", std::string(name),
                              "' the error ", rel, " (expected >= 0)"));
    }
    out.push_back(RequantizedTensor{std::string(name), std::string(t->traits.name), rel});
  }
  return out;
}

}  // namespace slimpack::gguf
