// `slimpack verify`: the loader's Verify() (manifest self-hash, every
// shard header through the loader's own CheckShardHeader, sizes and
// SHA-256 of shards and carried files), then what only a verifier checks:
// the bytes the spec requires to be zero are zero.
#include "cli/verify_command.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

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

// Reads [begin, end) of `fd` and names the first non-zero byte.
loader::Status CheckZeroBytes(int fd, uint64_t begin, uint64_t end, const std::string& path,
                              const std::string& what) {
  uint8_t buf[16384];
  uint64_t pos = begin;
  while (pos < end) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof(buf), end - pos));
    const ssize_t n = ::pread(fd, buf, want, static_cast<off_t>(pos));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return loader::OutOfRangeError(path + ": unexpected end of file at byte " +
                                     std::to_string(pos));
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != 0) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02x", buf[i]);
        return loader::InvalidArgumentError(
            path + ": byte " + std::to_string(pos + static_cast<uint64_t>(i)) + " (" +
            what + ") is " + hex +
            ", expected 0 (the format requires zero padding, formats/shard/format.h; "
            "the loader never reads these bytes)");
      }
    }
    pos += static_cast<uint64_t>(n);
  }
  return loader::OkStatus();
}

// After Verify() (files are regular, sizes, headers and hashes match): the
// bytes after the header up to the payload region, and the alignment
// padding between and after the payloads, are zero. The loader never reads
// them, so without this check anything could ride along in an artifact
// that hashes, loads and runs fine.
loader::Status CheckShardPadding(const std::string& dir, const loader::Manifest& m) {
  std::vector<std::vector<const loader::TensorInfo*>> by_shard(m.shards.size());
  for (const loader::TensorInfo& t : m.tensors) {
    if (t.shard < by_shard.size()) by_shard[t.shard].push_back(&t);
  }
  for (size_t s = 0; s < m.shards.size(); ++s) {
    const loader::ShardInfo& info = m.shards[s];
    const std::string path = dir + "/" + info.file;
    int fd;
    do {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      return loader::InvalidArgumentError(path + ": cannot open: " + std::strerror(errno));
    }
    uint8_t field[4] = {};
    uint32_t header_size = shard::kShardHeaderSize;
    if (::pread(fd, field, sizeof(field), offsetof(shard::ShardHeader, header_size)) ==
        static_cast<ssize_t>(sizeof(field))) {
      header_size = uint32_t{field[0]} | (uint32_t{field[1]} << 8) |
                    (uint32_t{field[2]} << 16) | (uint32_t{field[3]} << 24);
    }
    loader::Status st =
        CheckZeroBytes(fd, header_size, std::min<uint64_t>(shard::kDataRegionOffset, info.size),
                       path, "between the header and the payload region");
    std::vector<const loader::TensorInfo*>& tensors = by_shard[s];
    std::sort(tensors.begin(), tensors.end(),
              [](const auto* a, const auto* b) { return a->offset < b->offset; });
    uint64_t end = shard::kDataRegionOffset;
    for (const loader::TensorInfo* t : tensors) {
      if (!st.ok()) break;
      if (t->offset > end) {
        st = CheckZeroBytes(fd, end, t->offset, path,
                            "alignment padding before tensor '" + t->name + "'");
      }
      end = std::max(end, t->offset + t->nbytes);
    }
    if (st.ok() && end < info.size) {
      st = CheckZeroBytes(fd, end, info.size, path, "padding after the last tensor");
    }
    ::close(fd);
    if (!st.ok()) return st;
  }
  return loader::OkStatus();
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
  if (s.ok()) s = CheckShardPadding(options.path, a.manifest());
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
