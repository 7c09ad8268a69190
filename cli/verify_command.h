// `slimpack verify ARTIFACT`: full integrity check through the loader, and
// the artifact summary `slimpack inspect` prints for artifact directories.
#ifndef SLIMPACK_CLI_VERIFY_COMMAND_H_
#define SLIMPACK_CLI_VERIFY_COMMAND_H_

#include <string>

namespace slimpack::cli {

struct VerifyOptions {
  std::string path;
};

// Opens the artifact (manifest checks) and verifies the manifest self-hash,
// every shard header (with the loader's own check, so nothing that loading
// rejects passes), the SHA-256 and size of every shard and carried file,
// and that the bytes the format requires to be zero (after the shard
// header, and the alignment padding between and after payloads) are zero.
// 0 if all hold, 1 with a message naming the file (and byte) otherwise.
int RunVerify(const VerifyOptions& options);

// True if `path` is a directory holding manifest.json (an artifact, or a
// broken one the loader will explain).
bool IsArtifactDirectory(const std::string& path);


}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_VERIFY_COMMAND_H_
