// The optional per-tensor "quant" records of a manifest (spec.md section 5):
// how each quantized tensor's integers were chosen. The standalone loader
// ignores them (nothing needs them to dequantize), so the converter side
// reads them here, for ReadArtifactModel and `slimpack inspect`.
#ifndef SLIMPACK_FORMATS_SHARD_READER_QUANT_RECORDS_H_
#define SLIMPACK_FORMATS_SHARD_READER_QUANT_RECORDS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace slimpack::shard_reader {

struct QuantRecord {
  std::string algorithm;  // "" if the producer did not say
  int64_t bits = 0;
  int64_t group_size = 0;
  bool symmetric = false;
};

// Tensor name -> record, for every tensor entry that has a "quant" object.
// `manifest_text` is manifest.json as read; `file` names it in errors.
// InvalidArgument (naming the file, the tensor and the key) if the text is
// not a JSON object with a "tensors" array, or a record has a key of the
// wrong type; unknown keys inside a record are ignored.
absl::StatusOr<std::map<std::string, QuantRecord>> ParseQuantRecords(
    const std::string& manifest_text, const std::string& file);

}  // namespace slimpack::shard_reader

#endif  // SLIMPACK_FORMATS_SHARD_READER_QUANT_RECORDS_H_
