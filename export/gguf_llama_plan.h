// The GGUF export's plan (export/gguf_llama.cc writes it): the
// architecture llama.cpp reads the model as, the preset, and every tensor
// in llama.cpp's file order with its GGUF name, rope row order, quantized
// source (carried codes, act-order permutation) and the slot
// llama-quantize's type rules see. Nothing is read or encoded here.
#ifndef SLIMPACK_EXPORT_GGUF_LLAMA_PLAN_H_
#define SLIMPACK_EXPORT_GGUF_LLAMA_PLAN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "export/gguf_llama.h"
#include "export/gguf_types.h"
#include "formats/gguf/gguf_format.h"
#include "hf/layer_sizes.h"
#include "ir/graph.h"

namespace slimpack::gguf_export {

using gguf::TensorType;

// One tensor of the GGUF file and where its values come from.
struct Planned {
  std::string gguf_name;
  const ir::Tensor* source = nullptr;
  // A quantized source: its scale and zero point (null: none), and the ggml
  // type that holds its codes as they are (gguf_carried_codes.h), if any.
  const ir::Tensor* scale = nullptr;
  const ir::Tensor* zero_point = nullptr;
  std::optional<TensorType> carried;
  int64_t rope_heads = 0;  // > 0: rows permuted to llama.cpp's rope order
  // An act-order weight's input permutation (hf/input_perm.h), undone on
  // the dequantized values: GGUF stores columns in checkpoint order.
  std::shared_ptr<const std::vector<int64_t>> input_perm;
  TensorSlot slot;
};

// Everything the export decides before writing: the architecture, the
// layer sizes, the preset and every tensor in file order.
struct ExportPlan {
  const ir::ArchitectureInfo* a = nullptr;
  std::vector<hf::LayerSizes> sizes;
  std::string arch;
  Preset preset;
  std::vector<Planned> planned;
  std::vector<TypeOverride> type_overrides;  // GgufExportOptions', each used
};

// Checks `model` against what llama.cpp can read (a known family, the
// decoder's sizes, options it would need extra keys for, names every tensor
// has in llama.cpp, rotary rows that split into heads) and plans it; errors
// as ExportDecoderToGguf's.
absl::StatusOr<ExportPlan> PlanExport(const ir::Model& model, const GgufExportOptions& options);

// The HF rows of a rotary q/k tensor: dims[0] of a matrix, every element of
// a bias vector (convert_hf_to_gguf.py permutes biases as [rows, 1]), and
// the elements per row.
int64_t RopeRows(const ir::Tensor& t);
int64_t RopeCols(const ir::Tensor& t);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_LLAMA_PLAN_H_
