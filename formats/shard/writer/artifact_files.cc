#include "formats/shard/writer/artifact_files.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <set>

#include "formats/shard/format.h"
#include "formats/shard/writer/checked_io.h"
#include "formats/shard/writer/manifest_json.h"
#include "support/status_macros.h"

namespace slimpack::shard_writer {
namespace {

std::string Resolve(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// The model's directory: the input itself if it is a directory (HF
// checkpoints), else the directory of the input file.
std::string ModelDirectory(const ir::Model& model) {
  struct stat st;
  if (::stat(model.source_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Resolve(model.source_path);
  }
  const std::string resolved = Resolve(model.source_path);
  const size_t slash = resolved.rfind('/');
  return slash == std::string::npos ? "." : resolved.substr(0, slash);
}

// spec.md section 3: input files are named relative to the model directory
// ('/'-separated), never by absolute path; files outside it by base name.
std::string InputName(const std::string& model_dir, const std::string& path) {
  const std::string resolved = Resolve(path);
  if (resolved.size() > model_dir.size() + 1 &&
      resolved.compare(0, model_dir.size(), model_dir) == 0 &&
      resolved[model_dir.size()] == '/') {
    return resolved.substr(model_dir.size() + 1);
  }
  return resolved.substr(resolved.rfind('/') + 1);
}

absl::StatusOr<uint64_t> RegularFileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, path);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(path + ": not a regular file");
  }
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

absl::StatusOr<std::vector<CarriedFile>> CarriedFiles(const ir::Model& model) {
  std::vector<CarriedFile> out;
  std::set<std::string> names;
  for (const std::string& path : model.carried_files) {
    CarriedFile c;
    c.path = path;
    c.name = path.substr(path.rfind('/') + 1);
    if (!IsSafeArtifactFileName(c.name) ||
        c.name.rfind(shard::kShardFilePrefix, 0) == 0) {
      return absl::InvalidArgumentError(
          path + ": cannot be carried into the artifact under the name '" +
          c.name + "' (must match [A-Za-z0-9._-]{1,255}, not start with " +
          std::string(shard::kShardFilePrefix) + ", not be manifest.json)");
    }
    if (!names.insert(c.name).second) {
      return absl::InvalidArgumentError(
          path + ": another carried file is also named '" + c.name + "'");
    }
    auto over = model.carried_overrides.find(c.name);
    if (over != model.carried_overrides.end()) {
      c.bytes = &over->second;
      c.size = over->second.size();
    } else {
      ASSIGN_OR_RETURN(c.size, RegularFileSize(path));
    }
    out.push_back(std::move(c));
  }
  // Overrides naming no carried file are carried as new files.
  for (const auto& [name, bytes] : model.carried_overrides) {
    if (names.count(name) > 0) continue;
    if (!IsSafeArtifactFileName(name) || name.rfind(shard::kShardFilePrefix, 0) == 0) {
      return absl::InvalidArgumentError("in-memory carried file '" + name +
                                        "': not a valid artifact file name");
    }
    names.insert(name);
    out.push_back({name, name, bytes.size(), &bytes});
  }
  return out;
}

absl::StatusOr<std::vector<InputFile>> InputFiles(const ir::Model& model) {
  const std::string dir = ModelDirectory(model);
  std::map<std::string, InputFile> by_name;
  for (const std::string& path : model.input_files) {
    InputFile f;
    f.path = path;
    f.name = InputName(dir, path);
    ASSIGN_OR_RETURN(f.size, RegularFileSize(path));
    by_name.emplace(f.name, std::move(f));
  }
  std::vector<InputFile> out;
  for (auto& [name, f] : by_name) out.push_back(std::move(f));
  return out;
}

}  // namespace slimpack::shard_writer
