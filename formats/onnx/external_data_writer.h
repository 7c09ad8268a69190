// Collects tensor bytes destined for an ONNX external data file, assigns
// each a 64-byte aligned offset, and writes the file atomically.
#ifndef SLIMPACK_FORMATS_ONNX_EXTERNAL_DATA_WRITER_H_
#define SLIMPACK_FORMATS_ONNX_EXTERNAL_DATA_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace slimpack::onnx_format {

inline constexpr uint64_t kExternalDataAlignment = 64;

class ExternalDataWriter {
 public:
  // `location` is the file name recorded in each tensor's external_data.
  explicit ExternalDataWriter(std::string location)
      : location_(std::move(location)) {}

  const std::string& location() const { return location_; }
  // Reserves an aligned range for `data` (kept by reference, not copied) and
  // returns its offset. OutOfRange if the file would exceed 2^63 bytes.
  absl::StatusOr<uint64_t> Add(const ir::TensorData& data);
  bool empty() const { return entries_.empty(); }
  uint64_t size() const { return size_; }
  // Writes every reserved range, zero-padded, to `path` atomically.
  absl::Status WriteFile(const std::string& path) const;

 private:
  struct Entry {
    ir::TensorData data;
    uint64_t offset;
  };
  std::string location_;
  std::vector<Entry> entries_;
  uint64_t size_ = 0;
};

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_EXTERNAL_DATA_WRITER_H_
