// `slimpack convert ... --format gguf --algo awq --calib DATA`: AWQ whose
// quantizer is ggml's. For every group of linears sharing an input (q/k/v,
// gate/up, down, and o when every query head has its own KV head), the
// activation-aware scale search (quantize/numerics/awq.h) measures each
// candidate's output error with the weights rounded by ggml's encoder in the
// very type the preset gives each member (q4_K for q and k and q6_K for v
// under q4_k_m, say), then the chosen scales are multiplied into the
// members' columns and divided out of the norm or linear that produces
// their input (quantize/awq_fold.h). The model computes the same function
// in float; the export then encodes the scaled weights as usual.
#ifndef SLIMPACK_CONVERTER_GGUF_AWQ_H_
#define SLIMPACK_CONVERTER_GGUF_AWQ_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "converter/gguf_calibration.h"
#include "export/gguf_llama.h"
#include "ir/graph.h"
#include "quantize/awq_fold.h"
#include "support/progress.h"

namespace slimpack::converter {

struct GgufAwqRequest : GgufCalibration {
  int grid = 20;
  // `--awq-inputs FILE` instead of `calib` (converter/awq_input_stats.h):
  // the groups' inputs read, not captured; the same scales.
  std::shared_ptr<const quantize::AwqInputs> inputs;
  std::string inputs_file;
};

// Rewrites `model` (an HF llama-family checkpoint with float weights) in
// place: the matrices `options`' preset puts in a block type and a linear
// reads are scaled, their input producers folded. Errors name the
// calibration file or tensor.
absl::Status ApplyAwqOnGgmlGrids(ir::Model& model, const GgufAwqRequest& request,
                                 const gguf_export::GgufExportOptions& options);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_GGUF_AWQ_H_
