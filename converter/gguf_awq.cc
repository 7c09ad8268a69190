#include "converter/gguf_awq.h"

#include <map>
#include <set>

#include "calibration/linear_stats.h"
#include "formats/gguf/ggml_blocks.h"
#include "hf/llama_graph_builder.h"
#include "quantize/awq_fold.h"
#include "quantize/importance_matrix.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

// ggml's encoder (no importance: the export after AWQ uses none) and decoder,
// row by row.
quant::AwqRoundTrip GgmlRoundTrip(gguf::TensorType type) {
  return [type](const float* w, int64_t rows, int64_t cols, float* decoded) -> absl::Status {
    std::vector<uint8_t> row(static_cast<size_t>(gguf::RowBytes(type, cols)));
    for (int64_t r = 0; r < rows; ++r) {
      RETURN_IF_ERROR(gguf::QuantizeRow(type, w + r * cols, cols, nullptr, row.data()));
      RETURN_IF_ERROR(gguf::DequantizeRow(type, row.data(), cols, decoded + r * cols));
    }
    return absl::OkStatus();
  };
}

}  // namespace

absl::Status ApplyAwqOnGgmlGrids(ir::Model& model, const GgufAwqRequest& request,
                                 const gguf_export::GgufExportOptions& options) {
  ASSIGN_OR_RETURN(const std::vector<gguf_export::MatrixTarget> targets,
                   gguf_export::PlanMatrixTypes(model, options, /*with_importance=*/false));
  ASSIGN_OR_RETURN(ir::Model decoder, hf::BuildDecoderGraph(model));
  std::set<std::string> linears;
  for (const calibration::LinearLayer& l : calibration::FindLinearLayers(decoder.graph)) {
    linears.insert(l.weight);
  }
  quantize::AwqFoldOptions fold;
  fold.grid = request.grid;
  fold.max_runs = request.calib_samples;
  fold.threads = request.threads;
  fold.progress = request.progress;
  std::set<std::string> weights;
  for (const gguf_export::MatrixTarget& t : targets) {
    if (gguf::BlockSize(t.type) <= 1 || !linears.count(t.tensor)) continue;
    weights.insert(t.tensor);
    fold.round_trips[t.tensor] = GgmlRoundTrip(t.type);
  }
  absl::StatusOr<quantize::AwqFoldResult> done;
  if (request.inputs) {
    done = quantize::ApplyAwqScalesFrom(model, weights, {}, *request.inputs, fold);
    if (!done.ok()) return Annotate(done.status(), request.inputs_file);
  } else {
    ASSIGN_OR_RETURN(calibration::Dataset data,
                     quantize::OpenCalibrationData(decoder, request.calib));
    done = quantize::ApplyAwqScales(model, weights, {}, data, fold);
    RETURN_IF_ERROR(done.status());
  }
  const quantize::AwqFoldResult& folded = *done;
  if (request.log) {
    for (const std::string& line : folded.log) request.log("awq: " + line);
  }
  return absl::OkStatus();
}

}  // namespace slimpack::converter
