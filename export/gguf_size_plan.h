// A size planner for llama.cpp's types: which ggml type each matrix of a
// decoder gets so that the matrices average at most a given number of bits
// per weight with the least quantization error (llama-quantize has only its
// fixed mixes). Every matrix is encoded in every candidate type its row
// length allows, one matrix at a time, and the error measured against its
// f32 values, weighted per column by the importance matrix when there is
// one (the mean squared activation, so the sum estimates the error each
// matrix adds to its output; a matrix it does not cover is scored at the
// mean importance); the budget is then spent greedily on the
// upgrades with the largest error reduction per bit, along each matrix's
// lower convex hull of (bits, error). The result is a list of exact-name
// type overrides (gguf_types.h) for the export.
#ifndef SLIMPACK_EXPORT_GGUF_SIZE_PLAN_H_
#define SLIMPACK_EXPORT_GGUF_SIZE_PLAN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "export/gguf_llama.h"
#include "export/gguf_types.h"
#include "ir/graph.h"

namespace slimpack::gguf_export {

struct GgmlSizeTarget {
  // Over every 2-D matrix: the planned float ones, and those whose codes
  // are carried or re-encoded in the preset's type (counted, not planned).
  double bits_per_weight = 0;
  // Empty: every quantized ggml type (q2_K ... q8_0).
  std::vector<gguf::TensorType> candidates;
  int threads = 1;
};

struct GgmlSizePlan {
  std::vector<TypeOverride> overrides;  // one per planned matrix, "^name$"
  double bits_per_weight = 0;           // what the plan reaches
  double error = 0;                     // its summed (weighted) squared error
  // The preset's own mix (llama-quantize's rules) over the same matrices,
  // measured the same way: what the plan is to beat at that size.
  double preset_bits_per_weight = 0;
  double preset_error = 0;
  // "model.layers.0.mlp.down_proj.weight q6_K 6.56 bpw err 1.2e-03", for -v.
  std::vector<std::string> lines;
};

// Plans `model`'s float matrices under `options` (preset, importance; its
// type_overrides must be empty). InvalidArgument when the target is below
// what the cheapest candidates reach or above 16, or no matrix can take a
// candidate; errors of the plan and of the encoders otherwise.
absl::StatusOr<GgmlSizePlan> PlanGgmlTypesForSize(const ir::Model& model,
                                                  const GgufExportOptions& options,
                                                  const GgmlSizeTarget& target);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_GGUF_SIZE_PLAN_H_
