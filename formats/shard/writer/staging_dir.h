// The commit protocol of spec.md section 8: the artifact is built complete
// in "<output>.<random>.tmp/artifact/" beside the output, then moved into
// place with one rename (or an atomic exchange with the old artifact), so
// the output path always names the previous complete artifact, nothing, or
// the new complete artifact, and a leftover staging directory has no
// manifest.json at its top level (readers reject it as "not an artifact").
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_STAGING_DIR_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_STAGING_DIR_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace slimpack::shard_writer {

class StagingDir {
 public:
  // Creates "<parent>/<base>.<16 random hex>.tmp" (mkdir is exclusive),
  // holds an exclusive flock on it for the life of this object, and creates
  // the "artifact" directory inside it, where the caller writes. First
  // removes staging directories of the same output left by killed runs:
  // those whose lock nobody holds (a live writer keeps its lock).
  static absl::StatusOr<std::unique_ptr<StagingDir>> Create(
      const std::string& output);

  // Removes the staging directory (and, after Commit, the old artifact that
  // was swapped out into it).
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  // The directory the artifact is written into.
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // fsyncs the staged artifact directory, then makes it the output:
  // rename(2) when the output is absent or an empty directory,
  // renameat2(RENAME_EXCHANGE) when it holds an artifact (where the file
  // system lacks exchange, the old artifact is first renamed into the
  // staging directory: the output is then briefly absent, never partial).
  // fsyncs both parents and deletes the old artifact. `hook` sees
  // "before-swap" and "swapped" (tests kill the process there).
  absl::Status Commit(const std::function<void(std::string_view)>& hook);

 private:
  StagingDir() = default;

  std::string output_;  // normalized
  std::string parent_;
  std::string outer_;  // <parent>/<base>.<hex>.tmp, locked
  std::string path_;   // outer_/artifact
  int outer_fd_ = -1;
  int fd_ = -1;
};

// Removes a staging directory: its files, the files of directories directly
// inside it, those directories and itself. Best effort; false if anything
// is left. Never follows symlinks.
bool RemoveStagingTree(const std::string& path);

// True if `name` is a staging name for the output base name `base`:
// "<base>.<16 hex>.tmp".
bool IsStagingNameFor(const std::string& name, const std::string& base);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_STAGING_DIR_H_
