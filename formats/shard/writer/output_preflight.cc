#include "formats/shard/writer/output_preflight.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <set>

#include "formats/shard/format.h"
#include "formats/shard/writer/checked_io.h"
#include "formats/shard/writer/merge_parts.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"

namespace slimpack::shard_writer {
namespace {

// Not absl::EndsWith: Debian's Abseil has its own string_view type, which
// the std::string_view suffixes of format.h do not convert to.
bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Entry names of a directory (without . and ..); `dirs` receives the
// sub-directories.
absl::StatusOr<std::vector<std::string>> ListEntries(
    const std::string& path, std::vector<std::string>* dirs) {
  DIR* d = ::opendir(path.c_str());
  if (!d) return ErrnoStatus(errno, path);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISREG(st.st_mode)) {
      dirs->push_back(name);
    }
    names.push_back(std::move(name));
  }
  ::closedir(d);
  return names;
}

// File names an existing artifact's manifest lists, or nullopt if
// `dir`/manifest.json is missing or is not a slimpack manifest. Only the
// names are needed, so the manifest is not validated further.
std::optional<std::set<std::string>> ArtifactFiles(const std::string& dir) {
  // A part of a split conversion (merge_parts.h) lists its files in the
  // manifest its part.json holds.
  const bool part = ::faccessat(AT_FDCWD, (dir + "/" + std::string(shard::kManifestFileName)).c_str(), F_OK,
                                AT_SYMLINK_NOFOLLOW) != 0;
  const std::string path =
      dir + "/" + std::string(part ? kPartFileName : shard::kManifestFileName);
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || text.size() + n > shard::kMaxManifestBytes) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  nlohmann::json m = nlohmann::json::parse(text, nullptr, false);
  if (m.is_discarded() || !m.is_object()) return std::nullopt;
  if (part) {
    auto format = m.find("format");
    auto inner = m.find("manifest");
    if (format == m.end() || *format != std::string(kPartFormat) || inner == m.end()) {
      return std::nullopt;
    }
    m = nlohmann::json(*inner);
    if (!m.is_object()) return std::nullopt;
  }
  auto format = m.find("format");
  if (format == m.end() || *format != std::string(shard::kFormatName)) {
    return std::nullopt;
  }
  std::set<std::string> files;
  for (const char* list : {"shards", "carried_files"}) {
    auto it = m.find(list);
    if (it == m.end() || !it->is_array()) continue;
    for (const auto& entry : *it) {
      if (!entry.is_object()) continue;
      auto file = entry.find("file");
      if (file != entry.end() && file->is_string()) {
        files.insert(file->get<std::string>());
      }
    }
  }
  return files;
}

bool LooksLikeShard(const std::string& name) {
  return name.rfind(shard::kShardFilePrefix, 0) == 0 &&
         EndsWith(name, shard::kShardFileSuffix);
}

absl::StatusOr<OutputState> CheckExistingDirectory(const std::string& out,
                                                   bool force) {
  std::vector<std::string> dirs;
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListEntries(out, &dirs));
  if (names.empty()) return OutputState::kEmptyDir;
  if (!force) {
    return absl::AlreadyExistsError(
        out + ": output already exists; pass --force to replace it");
  }
  auto listed = ArtifactFiles(out);
  if (!listed) {
    return absl::FailedPreconditionError(
        out + ": exists and is not a slimpack artifact (no valid "
              "manifest.json); --force only replaces artifacts, so nothing "
              "was changed");
  }
  if (!dirs.empty()) {
    return absl::FailedPreconditionError(
        out + ": holds '" + dirs[0] +
        "', which is not a regular file of an artifact; refusing to "
        "replace it");
  }
  for (const std::string& name : names) {
    if (name == shard::kManifestFileName || name == kPartFileName || listed->count(name) ||
        LooksLikeShard(name) || EndsWith(name, shard::kStagingSuffix)) {
      continue;
    }
    return absl::FailedPreconditionError(
        out + ": holds '" + name +
        "', which its manifest does not list; refusing to replace a "
        "directory with unrelated files (move it away first)");
  }
  return OutputState::kArtifact;
}

}  // namespace

absl::StatusOr<OutputState> PreflightOutput(const std::string& output,
                                            bool force) {
  const std::string out = NormalizeOutputPath(output);
  const std::string base = BaseName(out);
  if (out.empty() || base.empty() || base == "." || base == "..") {
    return absl::InvalidArgumentError(
        "output '" + output + "': name a directory to create, e.g. out/model");
  }
  if (EndsWith(base, shard::kStagingSuffix)) {
    return absl::InvalidArgumentError(
        "output '" + output + "': names ending in " +
        std::string(shard::kStagingSuffix) +
        " are reserved for staging directories, which readers reject");
  }
  RETURN_IF_ERROR(support::CheckParentWritable(out));
  struct stat st;
  if (::lstat(out.c_str(), &st) != 0) {
    if (errno == ENOENT) return OutputState::kAbsent;
    return ErrnoStatus(errno, out);
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::InvalidArgumentError(
        out + ": is a symbolic link; refusing to replace it (name the real "
              "directory)");
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        out + ": exists and is not a directory; an artifact is a directory");
  }
  return CheckExistingDirectory(out, force);
}

}  // namespace slimpack::shard_writer
