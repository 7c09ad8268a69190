#include "formats/safetensors/checkpoint_importer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/status/status.h"
#include "ir/verifier.h"
#include "hf/hf_config.h"
#include "formats/safetensors/prequantized.h"
#include "formats/safetensors/safetensors_reader.h"
#include "formats/safetensors/shard_index.h"
#include "support/small_file.h"
#include "hf/weight_roles.h"
#include "support/mapped_file.h"
#include "support/status_macros.h"

namespace slimpack::safetensors {
namespace {

constexpr char kIndexName[] = "model.safetensors.index.json";
constexpr char kSingleName[] = "model.safetensors";
constexpr char kIndexSuffix[] = ".safetensors.index.json";
constexpr char kSafetensorsSuffix[] = ".safetensors";

// Side files a runtime needs besides the weights, carried unchanged.
constexpr const char* kCarriedNames[] = {
    "tokenizer.json",          "tokenizer.model", "tokenizer_config.json",
    "special_tokens_map.json", "vocab.json",      "merges.txt",
    "generation_config.json",  "config.json",
};

struct Checkpoint {
  std::string dir;
  std::string file;  // the index or the single .safetensors file
  bool sharded = false;
};

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

absl::Status ErrnoError(int err, const std::string& what) {
  std::string msg = what + ": " + std::strerror(err);
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::InvalidArgumentError(msg);
}

// Directory without the standard names: accept exactly one index, else
// exactly one .safetensors file.
absl::StatusOr<Checkpoint> FindInDirectory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError(errno, dir);
  std::vector<std::string> indexes, files;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (absl::EndsWith(name, kIndexSuffix)) {
      indexes.push_back(name);
    } else if (absl::EndsWith(name, kSafetensorsSuffix)) {
      files.push_back(name);
    }
  }
  ::closedir(d);
  if (indexes.size() == 1) return Checkpoint{dir, Join(dir, indexes[0]), true};
  if (indexes.empty() && files.size() == 1) {
    return Checkpoint{dir, Join(dir, files[0]), false};
  }
  if (indexes.empty() && files.empty()) {
    return absl::NotFoundError(dir + ": no " + kIndexName + ", " + kSingleName +
                               " or other .safetensors file");
  }
  std::sort(indexes.begin(), indexes.end());
  std::sort(files.begin(), files.end());
  const auto& which = indexes.empty() ? files : indexes;
  return absl::InvalidArgumentError(
      dir + ": ambiguous checkpoint, " + std::to_string(which.size()) +
      " candidates (" + which[0] + ", " + which[1] +
      ", ...): pass the file to import");
}

absl::StatusOr<Checkpoint> Resolve(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError(errno, path);
  if (S_ISDIR(st.st_mode)) {
    if (IsRegularFile(Join(path, kIndexName))) {
      return Checkpoint{path, Join(path, kIndexName), true};
    }
    if (IsRegularFile(Join(path, kSingleName))) {
      return Checkpoint{path, Join(path, kSingleName), false};
    }
    return FindInDirectory(path);
  }
  return Checkpoint{DirName(path), path, absl::EndsWith(path, ".json")};
}

// Maps one shard by name relative to the index's directory (the name has
// been checked to be a plain file name, so it cannot leave the directory).
absl::StatusOr<SafetensorsFile> ReadShard(int dir_fd, const std::string& dir,
                                          const std::string& shard,
                                          const std::string& index_path) {
  const std::string path = Join(dir, shard);
  // O_NONBLOCK: opening a FIFO planted where a file belongs would wait
  // for a writer forever; the regular-file check after fstat refuses it.
  int fd = ::openat(dir_fd, shard.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Annotate(ErrnoError(errno, path),
                    index_path + ": shard '" + shard + "'");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file,
                   MappedFile::FromFd(fd, path));
  return ReadSafetensors(std::move(file), {/*fp8_codes=*/true});
}

void MergeMetadata(const SafetensorsFile& f, ir::Model& model) {
  for (const auto& [k, v] : f.metadata) {
    auto [it, inserted] = model.metadata_props.emplace(k, v);
    if (!inserted && it->second != v) {
      model.warnings.push_back(f.path + ": __metadata__ '" + k + "' = '" + v +
                               "' differs from an earlier shard's '" +
                               it->second + "'; kept the earlier value");
    }
  }
}

// Closes a directory descriptor on every return path.
class DirFd {
 public:
  explicit DirFd(int fd) : fd_(fd) {}
  ~DirFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirFd(const DirFd&) = delete;
  DirFd& operator=(const DirFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Moves one shard's tensors to `out` after checking each against the index
// and against the shards read before it (`found_in`: tensor -> shard).
absl::Status TakeShardTensors(SafetensorsFile& file, const std::string& shard,
                              const ShardIndex& index,
                              const std::string& index_path,
                              std::map<std::string, std::string>& found_in,
                              std::vector<ir::Tensor>& out) {
  for (ir::Tensor& t : file.tensors) {
    const std::string ctx = file.path + ": tensor '" + t.name + "'";
    auto [it, inserted] = found_in.emplace(t.name, shard);
    if (!inserted) {
      return absl::InvalidArgumentError(ctx + " is also in shard '" +
                                        it->second + "'");
    }
    auto listed = index.weight_map.find(t.name);
    if (listed == index.weight_map.end()) {
      return absl::InvalidArgumentError(ctx + " is not in the weight_map of " +
                                        index_path);
    }
    if (listed->second != shard) {
      return absl::InvalidArgumentError(ctx + " is listed under shard '" +
                                        listed->second + "' in " + index_path);
    }
    out.push_back(std::move(t));
  }
  return absl::OkStatus();
}

// After all shards: every index entry must have been found in its shard.
absl::Status CheckIndexCovered(const ShardIndex& index,
                               const std::map<std::string, std::string>& found,
                               const std::string& index_path) {
  for (const auto& [name, shard] : index.weight_map) {
    if (!found.count(name)) {
      return absl::InvalidArgumentError(
          index_path + ": weight_map puts tensor '" + name + "' in shard '" +
          shard + "', which does not contain it");
    }
  }
  return absl::OkStatus();
}

// Reads every shard named by the index. A tensor must be in exactly the
// shard the index names; a tensor in two shards is rejected.
absl::StatusOr<std::vector<ir::Tensor>> ReadSharded(const Checkpoint& ckpt,
                                                    ir::Model& model) {
  ASSIGN_OR_RETURN(std::string text,
                   support::ReadSmallFile(ckpt.file, support::kMaxSideFileBytes));
  ASSIGN_OR_RETURN(ShardIndex index, ParseShardIndex(text, ckpt.file));
  model.input_files.push_back(ckpt.file);

  DirFd dir(::open(ckpt.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return ErrnoError(errno, ckpt.dir);
  std::vector<ir::Tensor> tensors;
  std::map<std::string, std::string> found_in;  // tensor -> shard
  for (const std::string& shard : index.shards) {
    ASSIGN_OR_RETURN(SafetensorsFile file,
                     ReadShard(dir.get(), ckpt.dir, shard, ckpt.file));
    model.input_files.push_back(file.path);
    MergeMetadata(file, model);
    RETURN_IF_ERROR(
        TakeShardTensors(file, shard, index, ckpt.file, found_in, tensors));
  }
  RETURN_IF_ERROR(CheckIndexCovered(index, found_in, ckpt.file));
  uint64_t total_bytes = 0;
  for (const ir::Tensor& t : tensors) total_bytes += t.data.size();
  if (index.total_size && *index.total_size != total_bytes) {
    model.warnings.push_back(
        ckpt.file + ": metadata.total_size " +
        std::to_string(*index.total_size) + " differs from the " +
        std::to_string(total_bytes) + " bytes of tensor data in the shards");
  }
  return tensors;
}

absl::StatusOr<std::vector<ir::Tensor>> ReadSingle(const Checkpoint& ckpt,
                                                   ir::Model& model) {
  ASSIGN_OR_RETURN(SafetensorsFile file, ReadSafetensorsFile(ckpt.file, {/*fp8_codes=*/true}));
  model.input_files.push_back(file.path);
  MergeMetadata(file, model);
  return std::move(file.tensors);
}

// Reads config.json beside the checkpoint and tags roles for known families.
absl::Status ApplyConfig(const Checkpoint& ckpt,
                         std::vector<ir::Tensor>& tensors, ir::Model& model) {
  const std::string config_path = Join(ckpt.dir, "config.json");
  auto arch = hf::ReadHfConfig(config_path);
  if (absl::IsNotFound(arch.status())) {
    model.warnings.push_back("no config.json beside " + ckpt.file +
                             ": weights imported without architecture info");
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(arch.status());
  model.input_files.push_back(config_path);
  if (!arch->known) {
    model.warnings.push_back(
        config_path + ": model_type '" + arch->model_type +
        "' is not a known family (llama, mistral, qwen2): weights imported "
        "without roles");
  }
  RETURN_IF_ERROR(hf::TagWeightRoles(*arch, config_path, tensors, model.warnings));
  model.architecture = std::move(*arch);
  return absl::OkStatus();
}

// An already-quantized checkpoint (prequantized.h): its packed linears
// become quantized weights with the checkpoint's codes before roles are
// tagged. Packed tensors without a quantization config are refused: their
// bits and zero convention cannot be guessed.
absl::Status ApplyPrequantConfigTo(const Checkpoint& ckpt,
                                   const std::optional<PrequantConfig>& config,
                                   std::vector<ir::Tensor>& tensors, ir::Model& model);

absl::Status ApplyPrequantConfig(const Checkpoint& ckpt, std::vector<ir::Tensor>& tensors,
                                 ir::Model& model) {
  ASSIGN_OR_RETURN(std::optional<PrequantConfig> config, ReadPrequantConfig(ckpt.dir));
  RETURN_IF_ERROR(ApplyPrequantConfigTo(ckpt, config, tensors, model));
  // F8_E4M3 tensors the config did not give a scale (safetensors_reader.h).
  for (const ir::Tensor& t : tensors) {
    if (t.quant.kind == ir::QuantKind::kFp8E4M3GroupWise && t.quant.scale.empty()) {
      return absl::InvalidArgumentError(
          (t.provenance.file.empty() ? ckpt.file : t.provenance.file) + ": tensor '" + t.name +
          "' has dtype F8_E4M3, but " +
          (config ? config->source + " does not describe FP8 weights"
                  : ckpt.dir + " has no quantization_config saying how it is scaled") +
          " (supported: compressed-tensors \"float-quantized\", quant_method \"fp8\")");
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyPrequantConfigTo(const Checkpoint& ckpt,
                                   const std::optional<PrequantConfig>& config,
                                   std::vector<ir::Tensor>& tensors, ir::Model& model) {
  if (!config) {
    for (const ir::Tensor& t : tensors) {
      if (absl::EndsWith(t.name, ".qweight") || absl::EndsWith(t.name, ".weight_packed")) {
        return absl::InvalidArgumentError(
            ckpt.file + ": tensor '" + t.name + "' is packed (GPTQ/AWQ/compressed-tensors) but " +
            ckpt.dir +
            " has no config.json quantization_config, quantize_config.json or quant_config.json "
            "saying how");
      }
    }
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(ImportPrequantized(*config, tensors));
  for (const char* side : {"quantize_config.json", "quant_config.json"}) {
    if (absl::StartsWith(config->source, Join(ckpt.dir, side))) {
      model.input_files.push_back(Join(ckpt.dir, side));
    }
  }
  return absl::OkStatus();
}

std::string GraphName(const std::string& file) {
  std::string base = file.substr(file.rfind('/') + 1);
  for (const char* suffix : {kIndexSuffix, kSafetensorsSuffix}) {
    if (absl::EndsWith(base, suffix))
      return base.substr(0, base.size() - strlen(suffix));
  }
  return base;
}

}  // namespace

absl::StatusOr<ir::Model> ImportSafetensors(const std::string& path) {
  ASSIGN_OR_RETURN(Checkpoint ckpt, Resolve(path));
  ir::Model model;
  model.source_format = ir::SourceFormat::kSafetensors;
  model.source_path = path;
  model.graph.name = GraphName(ckpt.file);
  std::vector<ir::Tensor> tensors;
  if (ckpt.sharded) {
    ASSIGN_OR_RETURN(tensors, ReadSharded(ckpt, model));
  } else {
    ASSIGN_OR_RETURN(tensors, ReadSingle(ckpt, model));
  }
  RETURN_IF_ERROR(ApplyPrequantConfig(ckpt, tensors, model));
  RETURN_IF_ERROR(ApplyConfig(ckpt, tensors, model));
  for (const char* name : kCarriedNames) {
    std::string p = Join(ckpt.dir, name);
    if (IsRegularFile(p)) model.carried_files.push_back(p);
  }
  std::sort(
      tensors.begin(), tensors.end(),
      [](const ir::Tensor& a, const ir::Tensor& b) { return a.name < b.name; });
  for (ir::Tensor& t : tensors) {
    RETURN_IF_ERROR(model.graph.AddInitializer(std::move(t)));
  }
  RETURN_IF_ERROR(ir::VerifyModel(model));
  return model;
}

}  // namespace slimpack::safetensors
