#include "formats/shard/writer/staging_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <vector>

#include "formats/shard/format.h"
#include "formats/shard/writer/checked_io.h"
#include "formats/shard/writer/output_preflight.h"
#include "support/status_macros.h"

namespace slimpack::shard_writer {
namespace {

constexpr size_t kRandomHexDigits = 16;
constexpr char kInnerName[] = "artifact";

// Unguessable suffix (bad-inputs.md: guessable temp names are a hazard).
std::string RandomHex() {
  uint8_t bytes[kRandomHexDigits / 2];
  ssize_t got = ::getrandom(bytes, sizeof(bytes), 0);
  if (got != static_cast<ssize_t>(sizeof(bytes))) {
    std::random_device rd;
    for (auto& b : bytes) b = static_cast<uint8_t>(rd());
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

absl::Status FsyncDirectory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, path + ": open for fsync");
  absl::Status s = Fsync(fd, path);
  ::close(fd);
  return s;
}

// Unlinks the entries of `dir_fd`; sub-directories (one level) are emptied
// and removed when `depth` allows. Closes nothing.
bool RemoveEntries(int dir_fd, int depth) {
  int fd = ::dup(dir_fd);
  if (fd < 0) return false;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return false;
  }
  std::vector<std::pair<std::string, bool>> entries;  // name, is directory
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    bool is_dir = ::fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                  S_ISDIR(st.st_mode);
    entries.emplace_back(std::move(name), is_dir);
  }
  ::closedir(d);
  bool ok = true;
  for (const auto& [name, is_dir] : entries) {
    if (is_dir) {
      if (depth == 0) {
        ok = false;
        continue;
      }
      int sub = ::openat(dir_fd, name.c_str(),
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        ok = false;
        continue;
      }
      ok = RemoveEntries(sub, depth - 1) && ok;
      ::close(sub);
      if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0) ok = false;
    } else if (::unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
      ok = false;
    }
  }
  return ok;
}

// Staging directories of earlier runs that died (their flock died with
// them). A live writer holds its lock, so its directory is left alone.
void RemoveStaleStaging(const std::string& parent, const std::string& base) {
  DIR* d = ::opendir(parent.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (struct dirent* e = ::readdir(d)) {
    if (IsStagingNameFor(e->d_name, base)) stale.push_back(e->d_name);
  }
  ::closedir(d);
  for (const std::string& name : stale) {
    const std::string path = parent + "/" + name;
    int fd = ::open(path.c_str(),
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) RemoveStagingTree(path);
    ::close(fd);
  }
}

}  // namespace

bool IsStagingNameFor(const std::string& name, const std::string& base) {
  const std::string_view suffix = shard::kStagingSuffix;
  if (name.size() != base.size() + 1 + kRandomHexDigits + suffix.size()) {
    return false;
  }
  if (name.compare(0, base.size(), base) != 0 || name[base.size()] != '.') {
    return false;
  }
  for (size_t i = 0; i < kRandomHexDigits; ++i) {
    char c = name[base.size() + 1 + i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool RemoveStagingTree(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;
  bool ok = RemoveEntries(fd, 1);
  ::close(fd);
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT) ok = false;
  return ok;
}

absl::StatusOr<std::unique_ptr<StagingDir>> StagingDir::Create(
    const std::string& output) {
  std::unique_ptr<StagingDir> dir(new StagingDir());
  dir->output_ = NormalizeOutputPath(output);
  dir->parent_ = ParentDirectory(dir->output_);
  const std::string base = BaseName(dir->output_);
  RemoveStaleStaging(dir->parent_, base);
  for (int attempt = 0;; ++attempt) {
    dir->outer_ = dir->parent_ + "/" + base + "." + RandomHex() +
                  std::string(shard::kStagingSuffix);
    if (::mkdir(dir->outer_.c_str(), 0755) == 0) break;
    if (errno != EEXIST || attempt == 8) {
      absl::Status s =
          ErrnoStatus(errno, dir->outer_ + ": creating staging directory");
      dir->outer_.clear();
      return s;
    }
  }
  dir->outer_fd_ = ::open(dir->outer_.c_str(),
                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir->outer_fd_ < 0) return ErrnoStatus(errno, dir->outer_);
  if (::flock(dir->outer_fd_, LOCK_EX | LOCK_NB) != 0) {
    return ErrnoStatus(errno, dir->outer_ + ": locking staging directory");
  }
  dir->path_ = dir->outer_ + "/" + kInnerName;
  if (::mkdirat(dir->outer_fd_, kInnerName, 0755) != 0) {
    return ErrnoStatus(errno, dir->path_ + ": creating staging directory");
  }
  dir->fd_ = ::openat(dir->outer_fd_, kInnerName,
                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir->fd_ < 0) return ErrnoStatus(errno, dir->path_);
  return dir;
}

StagingDir::~StagingDir() {
  if (fd_ >= 0) ::close(fd_);
  if (!outer_.empty()) RemoveStagingTree(outer_);
  if (outer_fd_ >= 0) ::close(outer_fd_);  // releases the lock last
}

absl::Status StagingDir::Commit(
    const std::function<void(std::string_view)>& hook) {
  auto call = [&hook](std::string_view phase) {
    if (hook) hook(phase);
  };
  RETURN_IF_ERROR(Fsync(fd_, path_));
  RETURN_IF_ERROR(Fsync(outer_fd_, outer_));
  call("before-swap");
  // Absent output or an empty directory: rename(2) replaces either
  // atomically.
  if (::rename(path_.c_str(), output_.c_str()) == 0) {
    call("swapped");
    RETURN_IF_ERROR(FsyncDirectory(parent_));
    return Fsync(outer_fd_, outer_);
  }
  if (errno != ENOTEMPTY && errno != EEXIST) {
    return ErrnoStatus(errno, output_ + ": renaming the staged artifact '" +
                                  path_ + "' into place");
  }
  // An existing artifact: swap the two directories in one step; the old
  // artifact lands in the staging directory, which the destructor deletes.
  if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, output_.c_str(),
                  RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
      return ErrnoStatus(errno, output_ + ": swapping in the staged artifact");
    }
    // No exchange on this file system: move the old artifact into the
    // staging directory (readers never look there), then the new one in.
    const std::string old_path = outer_ + "/old";
    if (::rename(output_.c_str(), old_path.c_str()) != 0) {
      return ErrnoStatus(errno, output_ + ": moving the old artifact aside");
    }
    if (::rename(path_.c_str(), output_.c_str()) != 0) {
      absl::Status s = ErrnoStatus(
          errno, output_ + ": renaming the staged artifact into place");
      // Put the old artifact back so the output is not left absent.
      ::rename(old_path.c_str(), output_.c_str());
      return s;
    }
  }
  call("swapped");
  RETURN_IF_ERROR(FsyncDirectory(parent_));
  return Fsync(outer_fd_, outer_);
}

}  // namespace slimpack::shard_writer
