// What the dataset reader and the path expansion share (internal to
// calibration/): a data file's kind by its extension, and its base name.
#ifndef SLIMPACK_CALIBRATION_DATA_FILES_INTERNAL_H_
#define SLIMPACK_CALIBRATION_DATA_FILES_INTERNAL_H_

#include <string>

namespace slimpack::calibration::internal {

enum class FileKind { kNpy, kNpz, kSafetensors, kTokens, kUnsupported };

FileKind KindOf(const std::string& path);

inline constexpr char kSupported[] = ".npz, .npy, .safetensors, .txt (token ids)";

std::string BaseName(const std::string& path);

}  // namespace slimpack::calibration::internal

#endif  // SLIMPACK_CALIBRATION_DATA_FILES_INTERNAL_H_
