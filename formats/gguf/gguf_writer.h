// Writes a GGUF v3 file: metadata key/values, then tensor infos, then each
// tensor's bytes at a multiple of the alignment (64: every tensor stays
// 64-byte aligned in a mapping, as in our own shards). Tensors are produced
// one at a time by a callback as the file is written, so memory holds one
// tensor, never the model. The file appears at its path only when complete
// (support/atomic_file.h).
#ifndef SLIMPACK_FORMATS_GGUF_GGUF_WRITER_H_
#define SLIMPACK_FORMATS_GGUF_GGUF_WRITER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "formats/gguf/gguf_format.h"
#include "support/byte_sink.h"

namespace slimpack::gguf {

// Fills `dst` (exactly the tensor's byte size) with the tensor's data.
using TensorFiller = std::function<absl::Status(uint8_t* dst, uint64_t size)>;
// Receives a tensor's bytes in order, piece by piece.
using TensorSink = support::ByteSink;
// Hands a tensor's bytes to `sink` in order (calls one at a time, from any
// thread), exactly `size` (the tensor's byte size) in all; returns the
// sink's error.
using TensorStreamer = std::function<absl::Status(uint64_t size, const TensorSink& sink)>;

struct WrittenFile {
  uint64_t file_bytes = 0;
  uint64_t tensor_bytes = 0;  // data section without padding
};

class GgufWriter {
 public:
  explicit GgufWriter(uint64_t alignment = kSlimpackAlignment);

  // Metadata in insertion order (llama.cpp does not care about order, but a
  // fixed order keeps files byte-identical run to run). A repeated key is an
  // error reported by Write().
  void AddU32(const std::string& key, uint32_t v);
  void AddI32(const std::string& key, int32_t v);
  void AddU64(const std::string& key, uint64_t v);
  void AddI64(const std::string& key, int64_t v);
  void AddF32(const std::string& key, float v);
  void AddBool(const std::string& key, bool v);
  void AddString(const std::string& key, const std::string& v);
  void AddStringArray(const std::string& key, const std::vector<std::string>& v);
  void AddI32Array(const std::string& key, const std::vector<int32_t>& v);
  void AddF32Array(const std::string& key, const std::vector<float>& v);
  // An f32 array of `count` values known only once every tensor is filled
  // (an error measured while encoding): `count` zeros hold its place in the
  // header and `values()`, called after the last filler, is written over
  // them. Write fails (Internal, nothing written) if it returns another count.
  void AddDeferredF32Array(const std::string& key, uint64_t count,
                           std::function<std::vector<float>()> values);
  // A value already in GGUF's encoding (gguf::Value::Encoded of a value of
  // `type` read from another file), copied as it is.
  void AddEncoded(const std::string& key, ValueType type, const std::string& value_bytes);

  // `ne` innermost first (ne[0] = row length). The row length must be a
  // multiple of the type's block size. Errors name the tensor.
  absl::Status AddTensor(const std::string& name, const std::vector<int64_t>& ne,
                         TensorType type, TensorFiller fill);
  // The same, for bytes made in pieces: each is written as it comes, so
  // no buffer holds the whole tensor. Too few or too many bytes fail the
  // Write (Internal, nothing written).
  absl::Status AddTensorStreamed(const std::string& name, const std::vector<int64_t>& ne,
                                 TensorType type, TensorStreamer stream);

  // Writes everything to `path` atomically. Fails with nothing written when
  // a filler fails (its status is returned, annotated with the tensor name).
  absl::StatusOr<WrittenFile> Write(const std::string& path);

  // The file of the metadata alone (no tensors; the header padded to the
  // alignment), for a side file such as an artifact's tokenizer.gguf.
  // Internal when a tensor was added or a key repeats.
  absl::StatusOr<std::string> MetadataOnlyFile() const;

  // Byte size of a tensor of `type` with `ne` (the row length must divide).
  static absl::StatusOr<uint64_t> TensorBytes(const std::string& name,
                                              const std::vector<int64_t>& ne, TensorType type);

 private:
  absl::Status CheckUnique(const std::string& what) const;
  struct PendingTensor {
    std::string name;
    std::vector<int64_t> ne;
    TensorType type;
    uint64_t bytes = 0;
    uint64_t offset = 0;
    TensorFiller fill;
    TensorStreamer stream;  // set instead of fill for AddTensorStreamed
  };
  void AddKey(const std::string& key, ValueType type);
  struct Deferred {
    std::string key;
    uint64_t kv_offset;  // of the first value in kv_bytes_
    uint64_t count;
    std::function<std::vector<float>()> values;
  };
  absl::Status FillDeferred(const Deferred& d, std::vector<float>* values) const;

  uint64_t alignment_;
  std::string kv_bytes_;  // serialised key/values
  uint64_t kv_count_ = 0;
  std::vector<std::string> keys_;
  std::vector<PendingTensor> tensors_;
  std::vector<Deferred> deferred_;
};

}  // namespace slimpack::gguf

#endif  // SLIMPACK_FORMATS_GGUF_GGUF_WRITER_H_
