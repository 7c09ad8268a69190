// The GGUF export's metadata: general.*, llama.cpp's architecture keys
// (per-layer widths for "deci") and the tokenizer, from the checkpoint's
// tokenizer files or, for a GGUF source, its own tokenizer keys.
#ifndef SLIMPACK_EXPORT_GGUF_LLAMA_METADATA_H_
#define SLIMPACK_EXPORT_GGUF_LLAMA_METADATA_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "export/gguf_types.h"
#include "formats/gguf/gguf_writer.h"
#include "hf/layer_sizes.h"
#include "ir/graph.h"

namespace slimpack::gguf_export {

// general.*, the architecture keys and the tokenizer: from the GGUF the
// model was imported from (its name and tokenizer keys as they were), or
// from the checkpoint's tokenizer files. A GGUF source with quantized
// tensors is refused unless `allow_requantize` (ReadGgufSourceMetadata).
absl::Status AddNameAndTokenizer(const ir::Model& model, const ir::ArchitectureInfo& a,
                                 const std::vector<hf::LayerSizes>& sizes,
                                 const std::string& arch, const Preset& preset,
                                 bool allow_requantize, gguf::GgufWriter& writer);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_LLAMA_METADATA_H_
