// Opens a file named by an untrusted relative path (ONNX external data
// `location`) so that it can only resolve to a regular, singly-linked file
// beneath a directory: no absolute paths, `..`, symlinks or hard links
// (bad-inputs.md #23-#25, #27).
#ifndef SLIMPACK_FORMATS_ONNX_SAFE_OPEN_H_
#define SLIMPACK_FORMATS_ONNX_SAFE_OPEN_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace slimpack::onnx_format {

// ORT's marker for "offset is a raw pointer into process memory".
inline constexpr char kOrtMemAddrMarker[] = "*/_ORT_MEM_ADDR_/*";

// Checks `location` without touching the file system. InvalidArgument
// (naming the location) if it is empty, contains a NUL byte, is absolute,
// has a `..` component (either separator), or is ORT's memory marker.
absl::Status ValidateRelativeLocation(const std::string& location);

// `location` with empty and `.` components removed ("./a//b" -> "a/b").
// Only meaningful after ValidateRelativeLocation succeeded.
std::string NormalizeRelativeLocation(const std::string& location);

enum class OpenStrategy {
  kAuto,          // openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), else walk
  kComponentWalk  // always the O_NOFOLLOW per-component fallback (tests)
};

// Opens `location` (already validated) read-only beneath `dir_fd` and
// returns the descriptor. Fails with NotFound if it does not exist,
// InvalidArgument if it or any directory on the way is a symbolic link, if it
// is not a regular file, or if it has more than one hard link.
absl::StatusOr<int> OpenBeneath(int dir_fd, const std::string& location,
                                OpenStrategy strategy = OpenStrategy::kAuto);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_SAFE_OPEN_H_
