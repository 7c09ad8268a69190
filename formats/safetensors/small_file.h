// Reads small text files (config.json, model.safetensors.index.json) whole,
// with a size cap so a huge or special file cannot exhaust memory.
#ifndef SLIMPACK_FORMATS_SAFETENSORS_SMALL_FILE_H_
#define SLIMPACK_FORMATS_SAFETENSORS_SMALL_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace slimpack::safetensors {

// Cap for JSON side files; real index/config files are well under 1 MiB.
inline constexpr uint64_t kMaxSideFileBytes = 64ull << 20;

// Returns the contents of `path`. NotFound if it does not exist,
// InvalidArgument if it is not a regular file or is larger than `max_bytes`
// (naming both sizes), or the errno-derived error of a failed read.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          uint64_t max_bytes);

}  // namespace slimpack::safetensors

#endif  // SLIMPACK_FORMATS_SAFETENSORS_SMALL_FILE_H_
