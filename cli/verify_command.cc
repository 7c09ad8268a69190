#include "cli/verify_command.h"

#include <sys/stat.h>

#include <cstdio>

#include "absl/strings/match.h"
#include "cli/exit_codes.h"
#include "formats/shard/loader/artifact.h"

#include "support/format_bytes.h"

namespace slimpack::cli {
namespace {

// A staging directory has no manifest at its top level, so the loader
// already rejects it; this adds what it is and what to do about it.
std::string StagingHint(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (absl::EndsWith(p, std::string(shard::kStagingSuffix)) ||
      absl::EndsWith(p, std::string(shard::kStagingSuffix) + "/artifact")) {
    return " (this is the staging directory of an interrupted or running "
           "`slimpack convert`, not an artifact; the next conversion to the "
           "same output deletes it)";
  }
  return "";
}

}  // namespace

bool IsArtifactDirectory(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  const std::string manifest = path + "/" + std::string(shard::kManifestFileName);
  return ::lstat(manifest.c_str(), &st) == 0;
}

int RunVerify(const VerifyOptions& options) {
  auto artifact = loader::Artifact::Open(options.path);
  if (!artifact.ok()) {
    std::fprintf(stderr, "slimpack verify: %s%s\n",
                 artifact.status().ToString().c_str(),
                 StagingHint(options.path).c_str());
    return kExitInputError;
  }
  const loader::Artifact& a = **artifact;
  loader::Status s = a.Verify();
  if (!s.ok()) {
    std::fprintf(stderr, "slimpack verify: %s\n", s.ToString().c_str());
    return kExitInputError;
  }
  uint64_t bytes = 0;
  for (const auto& sh : a.manifest().shards) bytes += sh.size;
  for (const auto& c : a.manifest().carried_files) bytes += c.size;
  std::printf("%s: OK (%zu tensors, %zu shards, %zu carried files, %s hashed)\n",
              options.path.c_str(), a.num_tensors(), a.manifest().shards.size(),
              a.manifest().carried_files.size(), support::FormatBytes(bytes).c_str());
  return kExitOk;
}

}  // namespace slimpack::cli
