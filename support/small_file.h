// Reads small text files (config.json, model.safetensors.index.json) whole,
// with a size cap so a huge or special file cannot exhaust memory.
#ifndef SLIMPACK_SUPPORT_SMALL_FILE_H_
#define SLIMPACK_SUPPORT_SMALL_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace slimpack::support {

// Cap for JSON side files; real index/config files are well under 1 MiB.
inline constexpr uint64_t kMaxSideFileBytes = 64ull << 20;

// Returns the contents of `path`. NotFound if it does not exist,
// InvalidArgument if it is not a regular file ("is a FIFO, not a regular
// file": a FIFO is refused without waiting for a writer) or is larger than
// `max_bytes` (naming both sizes), or the errno-derived error of a failed
// read.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          uint64_t max_bytes);

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_SMALL_FILE_H_
