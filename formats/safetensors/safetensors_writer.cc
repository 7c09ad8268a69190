#include "formats/safetensors/safetensors_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <random>
#include <set>

#include "absl/status/status.h"
#include "converter/ir/shape.h"
#include "formats/safetensors/safetensors_dtype.h"
#include "formats/safetensors/strict_json.h"
#include "nlohmann/json.hpp"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::safetensors {
namespace {

using nlohmann::json;

absl::Status CheckTensor(const ir::Tensor& t, std::set<std::string>& seen) {
  const std::string ctx = "tensor '" + t.name + "'";
  if (t.name.empty())
    return absl::InvalidArgumentError("tensor with empty name");
  if (FindInvalidUtf8(t.name)) {
    return absl::InvalidArgumentError(ctx + ": name is not valid UTF-8");
  }
  if (t.name == "__metadata__") {
    return absl::InvalidArgumentError(
        ctx + ": the name is reserved for file metadata");
  }
  if (!seen.insert(t.name).second) {
    return absl::InvalidArgumentError(ctx + ": duplicate tensor name");
  }
  if (!SafetensorsDTypeName(t.dtype)) {
    return absl::UnimplementedError(
        ctx + ": dtype " + std::string(ir::DTypeName(t.dtype)) +
        " cannot be stored in safetensors (supported: " +
        SupportedSafetensorsDTypes() + ")");
  }
  ASSIGN_OR_RETURN(uint64_t expected, t.ExpectedBytes());
  if (t.data.size() != expected) {
    return absl::InvalidArgumentError(
        ctx + ": has " + std::to_string(t.data.size()) + " bytes of data but " +
        std::string(ir::DTypeName(t.dtype)) + " " +
        ir::Shape::FromDims(t.dims).ToString() + " needs " +
        std::to_string(expected));
  }
  return absl::OkStatus();
}

// Loops over short writes and EINTR.
absl::Status WriteAll(int fd, const uint8_t* p, uint64_t n,
                      const std::string& what) {
  constexpr uint64_t kChunk = 1ull << 30;
  while (n > 0) {
    ssize_t w = ::write(fd, p, std::min(n, kChunk));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int err = errno;
      std::string msg = what + ": write failed with " + std::to_string(n) +
                        " bytes left: " + std::strerror(err);
      if (err == ENOSPC || err == EDQUOT) {
        return absl::ResourceExhaustedError(msg);
      }
      return absl::InternalError(msg);
    }
    if (w == 0) return absl::InternalError(what + ": write returned 0");
    p += w;
    n -= static_cast<uint64_t>(w);
  }
  return absl::OkStatus();
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Unguessable temp name beside the target, so the rename stays on one
// filesystem and stale temps are recognisable.
std::string TempName(const std::string& path) {
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(r));
  std::string dir = DirName(path);
  return (dir == "/" ? "" : dir) + "/." + BaseName(path) + ".tmp-" +
         std::to_string(::getpid()) + "-" + hex;
}

absl::Status WriteBody(int fd, const SafetensorsLayout& layout,
                       const std::vector<ir::Tensor>& tensors,
                       const std::string& path) {
  RETURN_IF_ERROR(
      WriteAll(fd, reinterpret_cast<const uint8_t*>(layout.header.data()),
               layout.header.size(), path + ": header"));
  for (size_t i : layout.order) {
    const ir::Tensor& t = tensors[i];
    RETURN_IF_ERROR(WriteAll(fd, t.data.data(), t.data.size(),
                             path + ": tensor '" + t.name + "'"));
  }
  if (::fsync(fd) != 0) {
    return absl::InternalError(path +
                               ": fsync failed: " + std::strerror(errno));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SafetensorsLayout> LayoutSafetensors(
    const std::vector<ir::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata) {
  std::set<std::string> seen;
  for (const ir::Tensor& t : tensors) RETURN_IF_ERROR(CheckTensor(t, seen));
  for (const auto& [k, v] : metadata) {
    if (FindInvalidUtf8(k) || FindInvalidUtf8(v)) {
      return absl::InvalidArgumentError("__metadata__ entry '" + k +
                                        "' is not valid UTF-8");
    }
  }

  SafetensorsLayout layout;
  layout.order.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) layout.order[i] = i;
  std::sort(layout.order.begin(), layout.order.end(), [&](size_t a, size_t b) {
    int ba = ir::DTypeBits(tensors[a].dtype);
    int bb = ir::DTypeBits(tensors[b].dtype);
    if (ba != bb) return ba > bb;
    return tensors[a].name < tensors[b].name;
  });
  layout.begin.assign(tensors.size(), 0);
  json header = json::object();
  uint64_t offset = 0;
  for (size_t i : layout.order) {
    const ir::Tensor& t = tensors[i];
    auto end = CheckedAdd(offset, t.data.size());
    if (!end) {
      return absl::InvalidArgumentError("tensor '" + t.name +
                                        "': data buffer size overflows");
    }
    layout.begin[i] = offset;
    header[t.name] = {{"dtype", std::string(*SafetensorsDTypeName(t.dtype))},
                      {"shape", t.dims},
                      {"data_offsets", {offset, *end}}};
    offset = *end;
  }
  layout.data_size = offset;
  if (!metadata.empty()) header["__metadata__"] = metadata;

  std::string text;
  try {
    text = header.dump();  // std::map storage: keys come out sorted
  } catch (const std::exception& e) {
    return absl::InternalError(std::string("header serialisation failed: ") +
                               e.what());
  }
  // Pad with spaces so the data buffer starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t n = text.size();
  layout.header.resize(8);
  for (int i = 0; i < 8; ++i)
    layout.header[i] = static_cast<char>(n >> (8 * i));
  layout.header += text;
  return layout;
}

absl::Status WriteSafetensorsFile(
    const std::string& path, const std::vector<ir::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata) {
  auto layout = LayoutSafetensors(tensors, metadata);
  if (!layout.ok()) return Annotate(layout.status(), path);

  const std::string tmp = TempName(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    std::string msg = path + ": cannot create temporary file " + tmp + ": " +
                      std::strerror(err);
    if (err == ENOENT) return absl::NotFoundError(msg);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
    return absl::InternalError(msg);
  }
  absl::Status status = WriteBody(fd, *layout, tensors, path);
  if (::close(fd) != 0 && status.ok()) {
    status =
        absl::InternalError(path + ": close failed: " + std::strerror(errno));
  }
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = absl::InternalError(path + ": rename from " + tmp +
                                 " failed: " + std::strerror(errno));
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  // Make the rename itself durable.
  int dir = ::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    int rc = ::fsync(dir);
    int err = errno;
    ::close(dir);
    if (rc != 0) {
      return absl::InternalError(
          path + ": fsync of directory failed: " + std::strerror(err));
    }
  }
  return absl::OkStatus();
}

}  // namespace slimpack::safetensors
