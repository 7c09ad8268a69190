// A GGUF input re-encoded as GGUF (llama-quantize's own job: an F16 GGUF in,
// a Q4_K_M one out). The importer decodes the weights; what the new file
// takes from the old one besides them is the tokenizer (every tokenizer.*
// key, copied byte for byte: vocabulary, scores, merges, special ids, chat
// template) and general.name. The architecture keys are written anew from
// the imported architecture, as for any other source.
#ifndef SLIMPACK_EXPORT_GGUF_SOURCE_H_
#define SLIMPACK_EXPORT_GGUF_SOURCE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/gguf/gguf_format.h"
#include "formats/gguf/gguf_writer.h"

namespace slimpack::gguf_export {

struct GgufSourceMetadata {
  std::string name;  // general.name, or "" when the file has none
  struct Key {
    std::string key;
    gguf::ValueType type;
    std::string encoded;  // gguf::Value::Encoded
  };
  std::vector<Key> tokenizer;  // file order
};

// Reads `path`'s metadata. InvalidArgument naming the tensor and its type
// when a tensor is stored quantized: decoding it and quantizing again adds
// a second rounding (llama-quantize refuses the same without
// --allow-requantize); convert from the float GGUF or the checkpoint, or
// set `allow_quantized` (the flag). Also when the file has no
// tokenizer.ggml.model (llama.cpp could not run it).
absl::StatusOr<GgufSourceMetadata> ReadGgufSourceMetadata(const std::string& path,
                                                          bool allow_quantized = false);

// Adds the tokenizer keys as they were.
void AddGgufSourceTokenizer(const GgufSourceMetadata& source, gguf::GgufWriter& writer);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_SOURCE_H_
