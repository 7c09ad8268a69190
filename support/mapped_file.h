// Read-only memory mapping of an input file. Tensors imported from
// safetensors or ONNX external data are zero-copy views into one of these,
// kept alive by shared_ptr for as long as any view exists.
#ifndef SLIMPACK_SUPPORT_MAPPED_FILE_H_
#define SLIMPACK_SUPPORT_MAPPED_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace slimpack {

class MappedFile {
 public:
  // Maps `path` read-only. Returns NotFound / PermissionDenied /
  // InvalidArgument (not a regular file) naming the path. An empty file maps
  // to size() == 0 and data() == nullptr.
  static absl::StatusOr<std::shared_ptr<MappedFile>> Open(
      const std::string& path);
  // Maps an already-open descriptor (used after a safe openat); takes
  // ownership of `fd` and closes it.
  static absl::StatusOr<std::shared_ptr<MappedFile>> FromFd(
      int fd, const std::string& path_for_errors);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::string path_;
};

}  // namespace slimpack

#endif  // SLIMPACK_SUPPORT_MAPPED_FILE_H_
