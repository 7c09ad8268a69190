// The encoding steps the GGUF export and the ggml-blocks artifact share
// (export/gguf_llama.cc, export/gguf_blocks.cc): a planned tensor's values
// as f32, its rows encoded on threads, and llama-quantize's type rules for
// a plan.
#ifndef SLIMPACK_EXPORT_GGUF_ENCODE_H_
#define SLIMPACK_EXPORT_GGUF_ENCODE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "export/gguf_llama_plan.h"
#include "export/gguf_types.h"
#include "support/in_order_sink.h"
#include "support/input_pages.h"

namespace slimpack::gguf_export {

// The values of `p.source` as f32 (numel of them): dequantized when it is
// quantized (an act-order weight's columns put back in checkpoint order),
// rows permuted to llama.cpp's rope order when p.rope_heads > 0 (the
// planner checked rows divide into heads of an even size).
// Float sources are widened on up to `threads` threads.
absl::Status ReadValuesF32(const Planned& p, uint64_t numel, int threads, std::vector<float>& out);

// Encodes rows [0, rows) of `values` into `dst` (size bytes), rows split
// over threads (each row is encoded independently, so the bytes do not
// depend on the thread count).
absl::Status EncodeRows(TensorType type, const std::vector<float>& values, int64_t rows,
                        int64_t cols, const float* importance, int threads, uint8_t* dst,
                        uint64_t size);

// Encodes all of `p.source` as `type` into `dst` (size bytes): what
// ReadValuesF32 + EncodeRows give, byte for byte. A float source is read a
// row at a time into a per-thread buffer, rows taken in chunks of about
// 2^20 weights by the threads in turn, and with `pages` each chunk's
// mapped input pages are given back once encoded, so memory stays a few
// rows per thread whatever the tensor's size; a quantized source is
// decoded whole (its layouts decode by group, not by row).
absl::Status EncodeTensor(const Planned& p, TensorType type, int64_t rows, int64_t cols,
                          const float* importance, int threads, const support::InputPages* pages,
                          uint8_t* dst, uint64_t size);

// Receives a tensor's encoded bytes in order, piece by piece: each call's
// bytes follow the previous call's. Calls come one at a time, from any of
// the encoding threads; an error stops the encoding and is returned.
using ByteSink = support::ByteSink;

// EncodeTensor's bytes handed to `sink` as each chunk of rows is encoded
// and every chunk before it has been handed over, instead of into one
// buffer: the caller can hash and write a chunk while later ones are
// encoded, and no buffer holds the whole tensor. `size` is the total.
absl::Status EncodeTensorStreamed(const Planned& p, TensorType type, int64_t rows, int64_t cols,
                                  const float* importance, int threads,
                                  const support::InputPages* pages, uint64_t size,
                                  const ByteSink& sink);

// llama-quantize's per-tensor rules for `plan`. They read the first
// layer's head counts (hparams n_head() / n_head_kv() without a layer).
TypeChooser ChooserFor(const ExportPlan& plan, bool with_importance);

// Every importance entry must name a matrix of the plan with its row
// length: an imatrix made for another model would otherwise be applied
// silently. InvalidArgument naming the imatrix file and the entry.
absl::Status CheckImportance(const ExportPlan& plan, const GgufImportance& importance,
                             const ir::Model& model);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_ENCODE_H_
