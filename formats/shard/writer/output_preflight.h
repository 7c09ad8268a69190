// Checks made before any conversion work (bad-inputs.md part b): the output
// path is usable, replacing it is allowed, and it holds none of the inputs.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_OUTPUT_PREFLIGHT_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_OUTPUT_PREFLIGHT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace slimpack::shard_writer {

enum class OutputState {
  kAbsent,    // nothing at the output path
  kEmptyDir,  // an empty directory (replaced without --force)
  kArtifact,  // an existing artifact (replaced only with --force)
};

// Checks, in order:
//  - the output names a directory to create: InvalidArgument for an empty
//    path, ".", "..", or a name ending in ".tmp" (readers reject staging
//    names);
//  - its parent exists (NotFound), is a directory (InvalidArgument) and is
//    writable (PermissionDenied);
//  - the output is absent or an empty directory; otherwise AlreadyExists
//    unless `force`; with `force` it must be an artifact directory whose
//    entries are all artifact files (manifest.json, files its manifest
//    names, shard-*.bin, *.tmp), so --force never deletes unrelated data:
//    FailedPrecondition otherwise, InvalidArgument for a symlink or a
//    non-directory.
absl::StatusOr<OutputState> PreflightOutput(const std::string& output,
                                            bool force);

// InvalidArgument if any of `inputs` (files or directories) is the output
// or lies inside it (device and inode compared along the resolved path, so
// hard links, symlinks and "a/../b" spellings are caught).
absl::Status CheckInputsOutsideOutput(const std::vector<std::string>& inputs,
                                      const std::string& output);

// ResourceExhausted naming both numbers if the file system holding
// `output`'s parent has fewer than `bytes` available.
absl::Status CheckFreeSpace(const std::string& output, uint64_t bytes);

// The output path without trailing slashes, and its parent directory ("."
// for a bare name).
std::string NormalizeOutputPath(const std::string& output);
std::string ParentDirectory(const std::string& normalized_output);
std::string BaseName(const std::string& normalized_output);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_OUTPUT_PREFLIGHT_H_
