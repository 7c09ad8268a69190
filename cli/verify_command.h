// `slimpack verify ARTIFACT`: full integrity check through the loader, and
// the artifact summary `slimpack inspect` prints for artifact directories.
#ifndef SLIMPACK_CLI_VERIFY_COMMAND_H_
#define SLIMPACK_CLI_VERIFY_COMMAND_H_

#include <string>

namespace slimpack::cli {

struct VerifyOptions {
  std::string path;
};

// Opens the artifact (manifest checks) and verifies the SHA-256 and size of
// every shard, carried file and the manifest. 0 if all match, 1 with the
// loader's message otherwise.
int RunVerify(const VerifyOptions& options);

// True if `path` is a directory holding manifest.json (an artifact, or a
// broken one the loader will explain).
bool IsArtifactDirectory(const std::string& path);


}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_VERIFY_COMMAND_H_
