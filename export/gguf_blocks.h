// An HF decoder with its tensors encoded in the ggml types a llama-quantize
// preset chooses, kept as an ir::Model for slimpack's artifact instead of a
// GGUF file (`slimpack convert CHECKPOINT -o DIR --quant q4_k_m`): every
// tensor the preset quantizes becomes an ir::QuantKind::kGgmlBlocks tensor
// (formats/shard/spec.md "ggml_blocks"), every other one the float type
// the preset gives it. The plan, llama-quantize's rules and fallbacks, the
// importance weighting, GPTQ's pre-encoded rows and carried codes are
// ExportDecoderToGguf's, so each block holds the bytes the GGUF export
// writes — in HF names and HF row order (the GGUF export moves rotary q/k
// rows when it writes them, so the same artifact exports to the same GGUF).
#ifndef SLIMPACK_EXPORT_GGUF_BLOCKS_H_
#define SLIMPACK_EXPORT_GGUF_BLOCKS_H_

#include <functional>

#include "absl/status/statusor.h"
#include "export/gguf_llama.h"
#include "ir/graph.h"

namespace slimpack::gguf_export {

struct GgmlBlocksModel {
  ir::Model model;          // the input with its tensors replaced
  GgufExportResult stats;   // as the GGUF export counts them (no file_bytes)
  // With `deferred`: the bytes of each ir::TensorData::Deferred block
  // tensor of `model`, for the shard writer (TensorEncoder::produce); each
  // source weight's mapped input pages are released once it is read.
  // Valid while the input model lives; callable from several threads.
  std::function<absl::StatusOr<ir::TensorData>(const ir::Tensor&)> produce;
  // The same bytes in order through a sink, chunk by chunk as encoded
  // (TensorEncoder::produce_streamed).
  std::function<absl::Status(const ir::Tensor&,
                             const std::function<absl::Status(const uint8_t*, uint64_t)>&)>
      produce_streamed;
};

// Errors as ExportDecoderToGguf's planning and encoding (nothing about the
// tokenizer: the artifact carries the checkpoint's files as they are).
// Tensors the GGUF would not hold (rotary frequency buffers) are kept as
// they are; scale, zero-point and permutation tensors of re-encoded
// weights are dropped. `deferred`: weights to encode are left as
// ir::TensorData::Deferred and encoded by `produce` when written (the same
// bytes), so a conversion holds one weight at a time.
absl::StatusOr<GgmlBlocksModel> EncodeDecoderAsGgmlBlocks(const ir::Model& model,
                                                          const GgufExportOptions& options,
                                                          bool deferred = false);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_BLOCKS_H_
