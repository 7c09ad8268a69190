#include "formats/shard/writer/output_preflight.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <set>

#include "formats/shard/format.h"
#include "formats/shard/writer/checked_io.h"
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
  const std::string path = dir + "/" + std::string(shard::kManifestFileName);
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
    if (name == shard::kManifestFileName || listed->count(name) ||
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

std::string NormalizeOutputPath(const std::string& output) {
  std::string out = output;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string ParentDirectory(const std::string& normalized) {
  size_t slash = normalized.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return normalized.substr(0, slash);
}

std::string BaseName(const std::string& normalized) {
  return normalized.substr(normalized.rfind('/') + 1);
}

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
  const std::string parent = ParentDirectory(out);
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(out + ": parent directory '" + parent +
                                 "' does not exist");
    }
    return ErrnoStatus(errno, out + ": parent directory '" + parent + "'");
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(out + ": parent '" + parent +
                                      "' is not a directory");
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    return ErrnoStatus(errno, out + ": parent directory '" + parent +
                                  "' is not writable");
  }
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

absl::Status CheckInputsOutsideOutput(const std::vector<std::string>& inputs,
                                      const std::string& output) {
  const std::string out = NormalizeOutputPath(output);
  struct stat out_st;
  if (::stat(out.c_str(), &out_st) != 0) return absl::OkStatus();
  for (const std::string& input : inputs) {
    char resolved[PATH_MAX];
    if (!::realpath(input.c_str(), resolved)) continue;
    // From the input itself up to "/": any component that is the output
    // (same device and inode) means replacing the output destroys it.
    std::string p = resolved;
    for (;;) {
      struct stat st;
      if (::stat(p.c_str(), &st) == 0 && st.st_dev == out_st.st_dev &&
          st.st_ino == out_st.st_ino) {
        return absl::InvalidArgumentError(
            "input '" + input + "' " +
            (p == resolved ? std::string("is") : std::string("is inside")) +
            " the output '" + out +
            "'; write the artifact somewhere else");
      }
      if (p == "/") break;
      size_t slash = p.rfind('/');
      p = slash == 0 ? "/" : p.substr(0, slash);
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFreeSpace(const std::string& output, uint64_t bytes) {
  const std::string parent = ParentDirectory(NormalizeOutputPath(output));
  struct statvfs vfs;
  if (::statvfs(parent.c_str(), &vfs) != 0) return absl::OkStatus();
  const uint64_t block = vfs.f_frsize ? vfs.f_frsize : 1;
  const uint64_t blocks_needed = bytes / block + (bytes % block ? 1 : 0);
  if (vfs.f_bavail < blocks_needed) {
    const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * block;
    return absl::ResourceExhaustedError(
        NormalizeOutputPath(output) + ": the artifact needs " +
        std::to_string(bytes) + " bytes but only " +
        std::to_string(avail) + " are free in '" +
        parent + "'");
  }
  return absl::OkStatus();
}

}  // namespace slimpack::shard_writer
