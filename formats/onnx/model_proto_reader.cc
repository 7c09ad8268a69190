// ModelProto parsing from an mmapped file. The mapping is dropped after
// parsing: ModelProto owns copies of every field, including raw_data.
#include "formats/onnx/model_proto_reader.h"

#include <climits>

#include "google/protobuf/io/coded_stream.h"
#include "support/mapped_file.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {

absl::StatusOr<std::unique_ptr<onnx::ModelProto>> ReadModelProto(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::Open(path));
  if (file->size() == 0) {
    return absl::InvalidArgumentError(
        path + ": file is empty (0 bytes); not an ONNX model");
  }
  if (file->size() > static_cast<uint64_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        path + ": file is " + std::to_string(file->size()) +
        " bytes; a protobuf message must be under 2 GiB (" +
        std::to_string(INT_MAX) +
        " bytes), so weights this large must be stored as external data");
  }
  google::protobuf::io::CodedInputStream input(
      file->data(), static_cast<int>(file->size()));
  // Explicit, rather than relying on the library default, which was 64 MiB
  // in protobuf releases before 3.11.
  input.SetTotalBytesLimit(INT_MAX);
  auto model = std::make_unique<onnx::ModelProto>();
  if (!model->ParseFromCodedStream(&input) || !input.ConsumedEntireMessage()) {
    return absl::InvalidArgumentError(
        path + ": not a valid ONNX ModelProto (protobuf parsing failed: the "
               "file is truncated, corrupt, not ONNX, or nests deeper than "
               "protobuf's recursion limit)");
  }
  return model;
}

}  // namespace slimpack::onnx_format
