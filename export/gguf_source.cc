#include "export/gguf_source.h"

#include "absl/strings/str_cat.h"
#include "formats/gguf/gguf_reader.h"
#include "support/status_macros.h"

namespace slimpack::gguf_export {

absl::StatusOr<GgufSourceMetadata> ReadGgufSourceMetadata(const std::string& path,
                                                          bool allow_quantized) {
  ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::OpenGgufFile(path));
  for (const gguf::TensorInfo& t : file.tensors) {
    if (allow_quantized) break;
    const auto type = static_cast<gguf::TensorType>(t.type);
    if (type != gguf::TensorType::kF32 && type != gguf::TensorType::kF16 &&
        type != gguf::TensorType::kBF16) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": tensor '", std::string(t.name), "' is stored as ", std::string(t.traits.name),
          "; re-encoding a quantized GGUF would round its weights twice (llama-quantize refuses "
          "it too without --allow-requantize): convert the F32/F16/BF16 GGUF or the original "
          "checkpoint, or pass --allow-requantize"));
    }
  }
  GgufSourceMetadata out;
  if (const gguf::Value* name = file.FindValue("general.name"); name && name->GetString()) {
    out.name = std::string(*name->GetString());
  }
  for (const gguf::KeyValue& kv : file.metadata) {
    if (kv.key.substr(0, 10) != "tokenizer.") continue;
    out.tokenizer.push_back({std::string(kv.key), kv.value.type(), kv.value.Encoded()});
  }
  if (file.FindValue("tokenizer.ggml.model") == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no tokenizer.ggml.model: the GGUF carries no tokenizer to copy, and llama.cpp "
              "needs one"));
  }
  return out;
}

void AddGgufSourceTokenizer(const GgufSourceMetadata& source, gguf::GgufWriter& writer) {
  for (const GgufSourceMetadata::Key& k : source.tokenizer) {
    writer.AddEncoded(k.key, k.type, k.encoded);
  }
}

}  // namespace slimpack::gguf_export
