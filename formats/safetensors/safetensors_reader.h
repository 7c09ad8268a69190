// Reader for one .safetensors file: validates the header as strictly as the
// Rust reference and returns tensors as zero-copy views into the mapping.
//
// Layout: u64 little-endian N | N bytes of UTF-8 JSON | data buffer.
// Rules we enforce (each violation names the file and the tensor):
//  - N <= 100,000,000 and 8 + N <= file size;
//  - the header is valid UTF-8 and its first byte is '{'. The spec says the
//    header MUST begin with '{'; we follow the spec, so leading whitespace
//    is rejected (the Rust reference tolerates it). Trailing whitespace is
//    allowed: writers pad the header with spaces to a multiple of 8;
//  - the header is one JSON object with no duplicate key at any level and at
//    most kMaxHeaderDepth levels of nesting;
//  - "__metadata__", if present, is an object of string values;
//  - every other key is a tensor {dtype, shape, data_offsets}; unknown extra
//    fields in a tensor entry are ignored, as the reference does;
//  - data_offsets are relative to the data buffer, two non-negative integers
//    with begin <= end <= data size and end - begin == numel x dtype size
//    (checked arithmetic);
//  - sorted by begin, the ranges tile the data buffer exactly: no overlap, no
//    hole, no trailing bytes. Zero-size tensors may share an offset.
#ifndef SLIMPACK_FORMATS_SAFETENSORS_SAFETENSORS_READER_H_
#define SLIMPACK_FORMATS_SAFETENSORS_SAFETENSORS_READER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "support/mapped_file.h"

namespace slimpack::safetensors {

// The reference implementation's MAX_HEADER_SIZE.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// A valid header is 3 levels deep (object / tensor / shape array); the rest
// is headroom for ignored extra fields.
inline constexpr int kMaxHeaderDepth = 16;

struct SafetensorsFile {
  std::string path;
  uint64_t header_length = 0;  // N: JSON bytes, padding included
  uint64_t data_start = 0;     // 8 + N: file offset of the data buffer
  std::map<std::string, std::string> metadata;  // "__metadata__"
  // In data-offset order. Each tensor's data is a view kept alive by the
  // mapping; provenance is FromFile(path, absolute byte offset).
  std::vector<ir::Tensor> tensors;
};

// Parses an already-mapped file. Errors, all prefixed with the file path:
//  - OutOfRange: file shorter than 8 bytes; header past end of file; a
//    tensor's data_offsets past the end of the data buffer;
//  - InvalidArgument: header over kMaxHeaderBytes, not UTF-8, not starting
//    with '{', not JSON, duplicate key, too deep, bad __metadata__, tensor
//    named __metadata__, malformed shape/data_offsets, shape overflow, size
//    mismatch, overlap, hole, trailing bytes, unknown dtype string;
//  - Unimplemented: a dtype the format defines that we do not support
//    (F8_E5M2, C64, ...), listing the supported ones.
inline constexpr char kF8E4M3[] = "F8_E4M3";

struct ReadOptions {
  // F8_E4M3 tensors (FP8 checkpoints) are read as their bytes: dtype u8
  // with quant.kind fp8_e4m3_groupwise and no scale yet. Only the
  // checkpoint importer asks for this: it gives them a scale
  // (prequantized.h, ImportFp8) or refuses them, so a marked tensor never
  // reaches a pass as plain u8 values. Otherwise F8_E4M3 is Unimplemented.
  bool fp8_codes = false;
};
absl::StatusOr<SafetensorsFile> ReadSafetensors(
    std::shared_ptr<MappedFile> file, const ReadOptions& options = {});

// Maps `path` (NotFound if missing) and calls ReadSafetensors.
absl::StatusOr<SafetensorsFile> ReadSafetensorsFile(const std::string& path,
                                                    const ReadOptions& options = {});

}  // namespace slimpack::safetensors

#endif  // SLIMPACK_FORMATS_SAFETENSORS_SAFETENSORS_READER_H_
