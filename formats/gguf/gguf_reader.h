// Reader for the GGUF container (llama.cpp's model file, versions 2 and 3):
// metadata key/values and tensor infos, every field validated as untrusted.
// Tensor bytes are not copied: values and tensors view the caller's buffer.
//
// Rules we enforce (each violation names the file, then the key or tensor,
// then the value found; the layout is drawn in gguf_format.h):
//  - magic "GGUF"; version 2 or 3 (1 and newer versions are Unimplemented; a
//    version whose low 16 bits are zero is a byte-swapped, big-endian file);
//  - every length and count is checked against the bytes left before it is
//    used, so no allocation is larger than the file justifies;
//  - keys are non-empty, at most kMaxKeyBytes, unique; value types are 0..12;
//    arrays of arrays are refused; bools are 0 or 1;
//  - general.alignment, if present, is a u32 power of two <= kMaxAlignment;
//  - tensor names are non-empty, shorter than ggml's GGML_MAX_NAME (64), unique;
//    n_dims <= 4; each ne[i] is in [0, 2^63) (ggml allows empty tensors) and
//    the element count and byte size fit (checked arithmetic); the type is one
//    gguf::GetTypeTraits knows; ne[0] is a multiple of the type's block size;
//  - tensor offsets are multiples of the alignment, the data lies inside the
//    file, no two tensors overlap, and (as llama.cpp's gguf.cpp requires)
//    tensors are stored in header order, each padded to the alignment, so
//    every offset equals the running padded total.
// Bytes after the last tensor are allowed (writers pad the last tensor).
#ifndef SLIMPACK_FORMATS_GGUF_GGUF_READER_H_
#define SLIMPACK_FORMATS_GGUF_GGUF_READER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/gguf/gguf_format.h"
#include "support/mapped_file.h"

namespace slimpack::gguf {

// The GGUF spec's limit on key length.
inline constexpr uint64_t kMaxKeyBytes = 65535;
// ggml's GGML_MAX_NAME is 64 bytes including the terminating NUL.
inline constexpr uint64_t kMaxTensorNameBytes = 63;
// Larger alignments are refused (bad-inputs.md #31).
inline constexpr uint64_t kMaxAlignment = uint64_t{1} << 20;

// "u8", "i32", "f32", "bool", "str", "arr", ... (gguf.cpp's names); "?" for
// a value outside 0..12.
std::string_view ValueTypeName(uint32_t type);

// ggml's name for any ggml_type value ("q8_1", "iq2_xxs", ...), or "" for a
// value ggml does not define.
std::string_view GgmlTypeName(uint32_t type);

// One metadata value: a scalar, or an array of scalars (strings included).
// Numeric and bool data stay in the file's buffer (little-endian, possibly
// unaligned) and are decoded on access; strings are views into the buffer.
// The getters convert only where the result is exact; they return nullopt
// for a type mismatch, an out-of-range conversion, or i >= size().
class Value {
 public:
  // kArray for arrays.
  ValueType type() const { return type_; }
  // The element type of an array; type() for a scalar.
  ValueType element_type() const { return element_type_; }
  bool is_array() const { return type_ == ValueType::kArray; }
  // Element count of an array; 1 for a scalar.
  uint64_t size() const { return count_; }

  // Any integer type (u8..i64) whose value is >= 0.
  std::optional<uint64_t> GetUInt(uint64_t i = 0) const;
  // Any integer type whose value fits in int64.
  std::optional<int64_t> GetInt(uint64_t i = 0) const;
  // f32 or f64 (f32 widened exactly).
  std::optional<double> GetFloat(uint64_t i = 0) const;
  std::optional<bool> GetBool(uint64_t i = 0) const;
  std::optional<std::string_view> GetString(uint64_t i = 0) const;

  // "u32 64", "str 'llama'", "arr[str] of 258": for messages.
  std::string Describe() const;

  // The value as GGUF stores it after its type field (a scalar's bytes; a
  // string's u64 length and bytes; an array's element type, u64 count and
  // elements), for GgufWriter::AddEncoded to copy it into another file byte
  // for byte.
  std::string Encoded() const;

 private:
  friend class Parser;
  ValueType type_ = ValueType::kU8;
  ValueType element_type_ = ValueType::kU8;
  uint64_t count_ = 1;
  const uint8_t* raw_ = nullptr;          // numeric/bool elements
  std::vector<std::string_view> strings_;  // kString scalar or string array
};

struct KeyValue {
  std::string_view key;  // views the buffer
  Value value;
};

struct TensorInfo {
  std::string_view name;   // views the buffer
  std::vector<int64_t> ne;  // n_dims entries; ne[0] is the row (innermost) dim
  uint32_t type = 0;        // a gguf::TensorType value
  TypeTraits traits;        // GetTypeTraits(type)
  uint64_t offset = 0;      // from the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;     // n_elements / block_size * block_bytes
  const uint8_t* data = nullptr;  // offset + data section start, in the buffer
};

struct GgufFile {
  std::string label;  // the file label errors were prefixed with
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  // File offset of the data section: the end of the tensor infos rounded up
  // to the alignment. May equal the file size when there is no tensor data.
  uint64_t data_offset = 0;
  std::vector<KeyValue> metadata;    // file order
  std::vector<TensorInfo> tensors;   // file order
  // Set by OpenGgufFile: keeps the buffer every view points into alive.
  std::shared_ptr<MappedFile> mapping;

  // nullptr when absent.
  const Value* FindValue(std::string_view key) const;
  const TensorInfo* FindTensor(std::string_view name) const;

  // Name -> index, filled by the parser; the keys view the buffer, so copies
  // stay valid. Ordered maps: O(log n) even for names crafted to collide
  // in a hash table.
  std::map<std::string_view, size_t, std::less<>> key_index;
  std::map<std::string_view, size_t, std::less<>> tensor_index;
};

// Parses `size` bytes at `data`. The result views `data`, which must outlive
// it. Every error message starts with "<file_label>: ". Codes:
//  - OutOfRange: a field runs past the end of the file; a count or length
//    larger than the bytes left could hold; tensor data past the end;
//  - InvalidArgument: bad magic, version 0 or byte-swapped, empty or
//    duplicate key, key over kMaxKeyBytes, unknown value type, nested array,
//    bool other than 0/1, bad general.alignment, bad tensor name, too many
//    dims, negative dim, element count or byte size overflow, row not a
//    multiple of the block size, a value that is not a ggml type, misaligned,
//    overlapping or out-of-order tensor offsets;
//  - Unimplemented: version 1 or > 3; a ggml type slimpack does not read
//    (listing the ones it does).
absl::StatusOr<GgufFile> ParseGguf(const uint8_t* data, uint64_t size,
                                   std::string file_label);

// Maps `path` (MappedFile::Open's errors) and parses it with the path as the
// label; the result keeps the mapping alive.
absl::StatusOr<GgufFile> OpenGgufFile(const std::string& path);

}  // namespace slimpack::gguf

#endif  // SLIMPACK_FORMATS_GGUF_GGUF_READER_H_
