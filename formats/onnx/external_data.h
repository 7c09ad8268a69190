// Resolves ONNX external data (TensorProto.data_location = EXTERNAL) to
// zero-copy views into files mmapped once each, confined to the model
// directory.
#ifndef SLIMPACK_FORMATS_ONNX_EXTERNAL_DATA_H_
#define SLIMPACK_FORMATS_ONNX_EXTERNAL_DATA_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "onnx/onnx_pb.h"
#include "support/mapped_file.h"

namespace slimpack::onnx_format {

struct ExternalSlice {
  ir::TensorData data;
  std::string file;  // display path of the external file
  uint64_t offset = 0;
};

class ExternalDataResolver {
 public:
  // `model_path` locates the model directory; nothing is opened until the
  // first Resolve.
  ExternalDataResolver(const std::string& model_path, bool verify_checksums);
  ~ExternalDataResolver();
  ExternalDataResolver(const ExternalDataResolver&) = delete;
  ExternalDataResolver& operator=(const ExternalDataResolver&) = delete;

  // Returns the `expected_bytes` bytes `tensor` keeps in external data.
  // Keys: location (required), offset and length (decimal, optional),
  // checksum (SHA-1 hex of the whole file, optional); others are ignored.
  // Errors do not name the tensor (the caller adds it):
  //  - InvalidArgument: no/duplicate keys, unsafe location, symlink, hard
  //    link, non-numeric or negative offset/length, length != expected;
  //  - NotFound: the file does not exist;
  //  - OutOfRange: offset + length past the end of the file or overflowing;
  //  - DataLoss: checksum mismatch.
  absl::StatusOr<ExternalSlice> Resolve(const onnx::TensorProto& tensor,
                                        uint64_t expected_bytes);

  // Display paths of every external file opened, in first-use order.
  const std::vector<std::string>& files() const { return files_; }

 private:
  struct OpenedFile {
    std::shared_ptr<MappedFile> mapping;
    std::string display_path;
    bool checksum_verified = false;
    std::string sha1_hex;  // computed lazily
  };

  absl::StatusOr<OpenedFile*> OpenFile(const std::string& location);
  absl::Status VerifyChecksum(OpenedFile& file, const std::string& expected);

  std::string model_dir_;      // "." when the model path has no directory
  std::string display_prefix_;  // "" or "<dir>/"
  bool verify_checksums_;
  int dir_fd_ = -1;
  std::map<std::string, OpenedFile> opened_;  // by normalized location
  std::vector<std::string> files_;
};

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_EXTERNAL_DATA_H_
