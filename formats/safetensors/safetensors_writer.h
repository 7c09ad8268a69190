// Writes ir::Tensor lists as .safetensors files: canonical header (sorted
// keys, space-padded to a multiple of 8 like the reference), atomic replace.
#ifndef SLIMPACK_FORMATS_SAFETENSORS_SAFETENSORS_WRITER_H_
#define SLIMPACK_FORMATS_SAFETENSORS_SAFETENSORS_WRITER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace slimpack::safetensors {

// Where each tensor goes: the header bytes (length prefix, JSON, padding)
// and the order and data offsets of the tensors in the data buffer.
struct SafetensorsLayout {
  std::string header;           // 8-byte prefix + JSON + spaces; size % 8 == 0
  std::vector<size_t> order;    // indices into the input, in data order
  std::vector<uint64_t> begin;  // data offset of each input tensor
  uint64_t data_size = 0;
};

// Computes the canonical layout. Data is ordered by element size (largest
// first, as the reference does, so every tensor is aligned to its element
// size) then by name; the JSON has sorted keys and no whitespace.
// InvalidArgument naming the tensor: empty, duplicate or non-UTF-8 name, the
// reserved name __metadata__, negative dim, data size != dtype x shape.
// Unimplemented: dtype with no safetensors name (packed 4-bit).
absl::StatusOr<SafetensorsLayout> LayoutSafetensors(
    const std::vector<ir::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata);

// Writes `tensors` to `path` through a temporary file in the same directory
// (created O_EXCL), fsync, rename and a directory fsync, so `path` holds
// either its old contents or the complete new file. Every write is checked;
// on error the temporary file is removed and the error names `path` and the
// failing step. Tensors may be views into the file being replaced.
absl::Status WriteSafetensorsFile(
    const std::string& path, const std::vector<ir::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata = {});

}  // namespace slimpack::safetensors

#endif  // SLIMPACK_FORMATS_SAFETENSORS_SAFETENSORS_WRITER_H_
