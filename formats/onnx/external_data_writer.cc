// External data file layout: tensors in the order added, each starting at a
// multiple of 64 bytes, gaps zero-filled.
#include "formats/onnx/external_data_writer.h"

#include "support/atomic_file.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {

absl::StatusOr<uint64_t> ExternalDataWriter::Add(const ir::TensorData& data) {
  auto offset = CheckedAlignUp(size_, kExternalDataAlignment);
  auto end = offset ? CheckedAdd(*offset, data.size()) : std::nullopt;
  if (!end || *end > static_cast<uint64_t>(INT64_MAX)) {
    return absl::OutOfRangeError("external data file '" + location_ +
                                 "' would exceed 2^63 bytes");
  }
  entries_.push_back({data, *offset});
  size_ = *end;
  return *offset;
}

absl::Status ExternalDataWriter::WriteFile(const std::string& path) const {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  uint64_t written = 0;
  for (const Entry& e : entries_) {
    RETURN_IF_ERROR(file->WriteZeros(e.offset - written));
    RETURN_IF_ERROR(file->Write(e.data.data(), e.data.size()));
    written = e.offset + e.data.size();
  }
  return file->Commit();
}

}  // namespace slimpack::onnx_format
