// genai_config.json for a decoder exported with its KV cache
// (--onnx-kv-cache): what ONNX Runtime GenAI reads to drive the model (its
// model builder writes the same file beside the models it makes). Our
// decoder concatenates past and new keys (present = concat(past, new)), so
// the cache is not a shared buffer (past_present_share_buffer false), the
// input and output names are GenAI's own, and search defaults to greedy
// with the checkpoint's generation_config.json taking precedence.
#ifndef SLIMPACK_EXPORT_GENAI_CONFIG_H_
#define SLIMPACK_EXPORT_GENAI_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::onnx_export {

// The file's text for `arch` (llama, mistral or qwen2) exported as
// `model_file` (a file name beside genai_config.json). `generation_config`
// is the checkpoint's generation_config.json text, or "" when it has none.
// FailedPrecondition when the layers have different widths (GenAI sizes
// every layer's cache alike); InvalidArgument naming the file when
// generation_config.json is not a JSON object.
absl::StatusOr<std::string> GenaiConfigJson(const ir::ArchitectureInfo& arch,
                                            const std::string& model_file,
                                            const std::string& generation_config);

}  // namespace slimpack::onnx_export

#endif  // SLIMPACK_EXPORT_GENAI_CONFIG_H_
