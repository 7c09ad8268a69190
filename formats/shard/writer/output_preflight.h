// Checks made before any conversion work (bad-inputs.md part b): the output
// path is usable, replacing it is allowed, and it holds none of the inputs.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_OUTPUT_PREFLIGHT_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_OUTPUT_PREFLIGHT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "support/output_path.h"

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
//  - support::CheckParentWritable: its parent exists (NotFound), is a
//    directory (InvalidArgument) and a file can be created in it
//    (PermissionDenied "directory 'P' is not writable", also for root on
//    /proc, where access(2) says yes);
//  - the output is absent or an empty directory; otherwise AlreadyExists
//    unless `force`; with `force` it must be an artifact directory whose
//    entries are all artifact files (manifest.json, files its manifest
//    names, shard-*.bin, *.tmp), so --force never deletes unrelated data:
//    FailedPrecondition otherwise, InvalidArgument for a symlink or a
//    non-directory.
absl::StatusOr<OutputState> PreflightOutput(const std::string& output,
                                            bool force);

// The generic rules live in support/output_path.h, shared with the
// single-file writers of calibrate, run and report:
//  - CheckInputsOutsideOutput: InvalidArgument if any input (file or
//    directory) is the output or lies inside it (device and inode compared
//    along the resolved path, so hard links, symlinks and "a/../b"
//    spellings are caught);
//  - CheckFreeSpace: ResourceExhausted naming both numbers (PermissionDenied
//    for a file system without storage, such as /proc);
//  - NormalizeOutputPath (no trailing slashes), ParentDirectory ("." for a
//    bare name), BaseName.
using support::BaseName;
using support::CheckFreeSpace;
using support::CheckInputsOutsideOutput;
using support::NormalizeOutputPath;
using support::ParentDirectory;

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_OUTPUT_PREFLIGHT_H_
