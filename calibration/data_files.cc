// Dataset paths: directories expanded to their data files (sorted byte-wise,
// so the order is locale-independent) and the files' digests.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "calibration/data_files_internal.h"
#include "calibration/dataset.h"
#include "formats/shard/writer/file_digest.h"
#include "support/status_macros.h"

namespace slimpack::calibration {
namespace internal {

FileKind KindOf(const std::string& path) {
  if (absl::EndsWith(path, ".npy")) return FileKind::kNpy;
  if (absl::EndsWith(path, ".npz")) return FileKind::kNpz;
  if (absl::EndsWith(path, ".safetensors")) return FileKind::kSafetensors;
  if (absl::EndsWith(path, ".txt")) return FileKind::kTokens;
  return FileKind::kUnsupported;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace internal
namespace {

using internal::BaseName;
using internal::FileKind;
using internal::KindOf;
using internal::kSupported;

absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return absl::InvalidArgumentError(dir + ": cannot list directory: " +
                                      std::strerror(errno));
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;
    if (KindOf(name) == FileKind::kUnsupported) continue;
    struct stat st;
    const std::string full = dir + "/" + name;
    if (stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());  // byte-wise: locale-independent
  if (names.empty()) {
    return absl::InvalidArgumentError(
        dir + ": dataset directory has no data files (supported: " +
        std::string(kSupported) + ")");
  }
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(dir + "/" + n);
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandDataPaths(const std::vector<std::string>& paths) {
  if (paths.empty()) return absl::InvalidArgumentError("no dataset paths given");
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) {
      return absl::NotFoundError(p + ": dataset path does not exist");
    }
    if (S_ISDIR(st.st_mode)) {
      ASSIGN_OR_RETURN(auto files, ListDirectory(p));
      out.insert(out.end(), files.begin(), files.end());
    } else if (KindOf(p) == FileKind::kUnsupported) {
      return absl::UnimplementedError(p + ": unsupported dataset file (supported: " +
                                      std::string(kSupported) + ")");
    } else {
      out.push_back(p);
    }
  }
  return out;
}

absl::StatusOr<std::vector<DataFileDigest>> DigestDataFiles(const std::vector<std::string>& files) {
  std::vector<DataFileDigest> out;
  for (const std::string& p : files) {
    ASSIGN_OR_RETURN(shard_writer::FileDigest d, shard_writer::HashFile(p));
    out.push_back({BaseName(p), d.size, d.sha256});
  }
  return out;
}

}  // namespace slimpack::calibration
