// The output rules every command that writes follows (bad-inputs.md part b),
// shared by `convert` (an artifact directory, formats/shard/writer/
// output_preflight.h adds the artifact-specific part) and the single-file
// and report-directory writers of `calibrate`, `run` and `report`:
//  - the output's directory exists and a file can really be created in it
//    (a probe, so root on /proc or a read-only mount is caught, not only
//    permission bits);
//  - the output is none of the command's inputs (device and inode along the
//    resolved path, never string comparison, so hard links, symlinks and
//    "a/../b" spellings are caught);
//  - an existing file is replaced only if we wrote it (the caller says how
//    to recognise that) or the user passed --force, and never if it is a
//    directory, a symbolic link or a special file;
//  - the bytes go through AtomicFile (support/atomic_file.h).
#ifndef SLIMPACK_SUPPORT_OUTPUT_PATH_H_
#define SLIMPACK_SUPPORT_OUTPUT_PATH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace slimpack::support {

// The output path without trailing slashes; its parent directory ("." for a
// bare name, "/" for a top-level name) and last component.
std::string NormalizeOutputPath(const std::string& output);
std::string ParentDirectory(const std::string& normalized_output);
std::string BaseName(const std::string& normalized_output);

// The directory that will hold `output` exists (NotFound "parent directory
// 'P' does not exist"), is a directory (InvalidArgument) and a file can be
// created in it: PermissionDenied "<output>: directory 'P' is not writable
// (<reason>)" otherwise. Writability is tested by creating and removing a
// hidden, unguessably named file, because access(2) says yes to root on
// /proc, /sys and read-only mounts, where the write would fail later (or a
// free-space check would report "0 bytes free").
absl::Status CheckParentWritable(const std::string& output);

// InvalidArgument if any of `inputs` (files or directories) is `output` or
// lies inside it: the check for an output directory that is replaced as a
// whole. Inputs that do not exist are skipped.
absl::Status CheckInputsOutsideOutput(const std::vector<std::string>& inputs,
                                      const std::string& output);

// InvalidArgument "<flag> '<output>' is the input '<input>'" if `output`
// (when it exists) is the same file or directory as one of `inputs`: the
// check for outputs written beside other files (a single file, or the files
// of a report directory).
absl::Status CheckOutputIsNotAnInput(const std::vector<std::string>& inputs,
                                     const std::string& output,
                                     std::string_view flag = "-o");

// ResourceExhausted naming both numbers if the file system holding
// `output`'s parent has fewer than `bytes` available.
absl::Status CheckFreeSpace(const std::string& output, uint64_t bytes);

// What a command writes, for PreflightOutputFile: how to recognise a file it
// wrote earlier (replaced without --force) and how to name such files in the
// refusal.
struct OutputKind {
  // e.g. "a slimpack calibration table (JSON with \"format\":
  // \"slimpack-calibration\")".
  std::string description;
  // True if the existing regular file at `path` was written by us.
  std::function<bool(const std::string& path)> written_by_us;
};

enum class ExistingOutput {
  kAbsent,    // nothing at the output path
  kOurs,      // a file we wrote: replaced
  kReplaced,  // someone else's file, replaced because of --force
};

// The checks before a command writes the single file `output` (nothing is
// created; run it before any work, and again just before writing):
//  - InvalidArgument for an empty path or one ending in '/';
//  - CheckParentWritable;
//  - an existing `output`: InvalidArgument if it is a directory, a symbolic
//    link (name the real file) or not a regular file (a FIFO, /dev/null: the
//    rename would replace the device node itself); AlreadyExists "<output>:
//    exists and is not <description>; pass --force to replace it" if
//    `kind.written_by_us` says no and `force` is false.
absl::StatusOr<ExistingOutput> PreflightOutputFile(const std::string& output,
                                                   bool force,
                                                   const OutputKind& kind);

// True if `path` is a regular file holding a JSON object whose top-level
// "format" member is the string `format`. Reads at most the first 1 MiB
// with a streaming parser that stops at that member, so a large table is
// not read whole; a FIFO is not opened for reading.
bool JsonFileHasFormat(const std::string& path, std::string_view format);

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_OUTPUT_PATH_H_
