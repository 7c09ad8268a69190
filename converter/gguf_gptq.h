// `slimpack convert ... --format gguf --algo gptq --calib DATA`: GPTQ whose
// rounding is ggml's. Every matrix the preset puts in a block type
// (Q4_0 .. Q8_0, Q2_K .. Q6_K) is quantized column by column with error
// feedback (quantize/numerics/gptq.h), each block's scales fixed by ggml's
// own encoder (imatrix-weighted, on the weights as GPTQ has updated them)
// when GPTQ reaches it, so the feedback sees the f16 super-scales and
// quantized sub-block scales llama.cpp decodes. Layers go in order, each
// calibrated on the outputs of the layers before it as quantized
// (quantize/gptq_layers.h). The codes are written as they are.
#ifndef SLIMPACK_CONVERTER_GGUF_GPTQ_H_
#define SLIMPACK_CONVERTER_GGUF_GPTQ_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "converter/gguf_calibration.h"
#include "export/gguf_llama.h"
#include "ir/graph.h"
#include "quantize/hessian_source.h"
#include "support/progress.h"

namespace slimpack::converter {

struct GgufGptqRequest : GgufCalibration {
  double percdamp = 0.01;
  int64_t block_size = 128;
  // `--hessians FILE` instead of `calib`: each matrix quantized from the
  // float model's statistics (converter/hessian_stats.h), no model run; the
  // importance is the Hessians' diagonal.
  std::shared_ptr<const quantize::HessianSource> hessians;
};

// Fills options->encoded (and options->importance with the mean x^2 each
// matrix's input had, llama-quantize's imatrix, so the preset's rules and
// the file's quantize.imatrix keys are those of an imatrix export) for the
// matrices of `model` (an HF llama-family checkpoint) that the preset
// quantizes to a block type and a linear layer reads; the token embedding
// keeps ggml's encoder. Errors name the calibration file or tensor.
absl::Status EncodeMatricesWithGptq(const ir::Model& model, const GgufGptqRequest& request,
                                    gguf_export::GgufExportOptions* options);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_GGUF_GPTQ_H_
