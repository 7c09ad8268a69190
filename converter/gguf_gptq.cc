#include "converter/gguf_gptq.h"

#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "calibration/linear_stats.h"
#include "formats/gguf/ggml_blocks.h"
#include "formats/gguf/ggml_grid.h"
#include "hf/llama_graph_builder.h"
#include "ir/float_convert.h"
#include "quantize/gptq_layers.h"
#include "quantize/hessian_source.h"
#include "quantize/importance_matrix.h"
#include "quantize/numerics/gptq.h"
#include "quantize/weight_matrix.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

using gguf::TensorType;

// ggml's blocks as GPTQ's grid: Fix runs ggml's encoder on one block of the
// updated weights (with the importance of its columns) and reads back the
// grid every weight of it is on (the 32-weight types' imatrix search scales
// its weights by a mean square, which ggml takes over the whole row and this
// over the block: the rest of the row is not final yet); Round picks the nearest code there. Codes
// go into the block once its last column is rounded. Per-row state only, so
// rows on different threads never share a byte.
class GgmlGptqGrid : public quant::GptqGrid {
 public:
  GgmlGptqGrid(TensorType type, int64_t rows, int64_t cols, const float* importance)
      : type_(type),
        cols_(cols),
        block_(gguf::BlockSize(type)),
        block_bytes_(gguf::RowBytes(type, block_)),
        row_bytes_(gguf::RowBytes(type, cols)),
        importance_(importance),
        bytes_(static_cast<size_t>(rows * row_bytes_)),
        grids_(static_cast<size_t>(rows * (block_ / kSub))),
        codes_(static_cast<size_t>(rows * block_)) {}

  int64_t block() const override { return block_; }

  absl::Status Fix(int64_t row, int64_t c0, const float* values, int64_t len) override {
    if (len != block_) {
      return absl::InternalError(absl::StrCat("row length ", cols_, " is not a multiple of ",
                                              block_));
    }
    uint8_t* dst = BlockAt(row, c0);
    RETURN_IF_ERROR(gguf::QuantizeRow(type_, values, block_,
                                      importance_ ? importance_ + c0 : nullptr, dst));
    gguf::WeightGrid grids[gguf::kQK_K];
    RETURN_IF_ERROR(gguf::BlockGrids(type_, dst, grids));
    for (int64_t e = 0; e < block_; ++e) {
      const gguf::WeightGrid& a = grids[e];
      const gguf::WeightGrid& b = grids[e - e % kSub];
      if (a.scale != b.scale || a.offset != b.offset || a.zero != b.zero || a.qmin != b.qmin ||
          a.qmax != b.qmax) {
        return absl::InternalError(absl::StrCat(std::string(gguf::TypeName(type_)),
                                                ": weights ", e - e % kSub, " and ", e,
                                                " of a block have different grids"));
      }
    }
    for (int64_t s = 0; s < block_ / kSub; ++s) grids_[row * (block_ / kSub) + s] = grids[s * kSub];
    return absl::OkStatus();
  }

  float Round(int64_t row, int64_t col, float v) override {
    const int64_t j = col % block_;
    const gguf::WeightGrid& g = grids_[row * (block_ / kSub) + j / kSub];
    const int code = gguf::NearestCode(g, v);
    codes_[row * block_ + j] = static_cast<uint8_t>(code);
    if (j == block_ - 1) {
      // In range by construction (NearestCode clamps to the grid's codes).
      gguf::SetBlockCodes(type_, codes_.data() + row * block_, BlockAt(row, col - j)).IgnoreError();
    }
    return g.scale * static_cast<float>(code - g.zero) + g.offset;
  }

  std::vector<uint8_t> TakeBytes() { return std::move(bytes_); }

 private:
  uint8_t* BlockAt(int64_t row, int64_t c0) {
    return bytes_.data() + row * row_bytes_ + (c0 / block_) * block_bytes_;
  }

  TensorType type_;
  int64_t cols_, block_, block_bytes_, row_bytes_;
  const float* importance_;
  std::vector<uint8_t> bytes_;
  // Every ggml type shares one grid per 16 weights (q2_K/q3_K/q6_K's
  // sub-blocks; the others' are 32 or the whole block), so a row keeps one
  // per 16 of its current block: a 128k-row output matrix needs 40 MB, not
  // the 650 MB of one per weight.
  static constexpr int64_t kSub = 16;
  std::vector<gguf::WeightGrid> grids_;  // per row: the current block's
  std::vector<uint8_t> codes_;           // per row: the current block's
};

absl::StatusOr<std::vector<float>> ValuesF32(const ir::Tensor& t) {
  const uint64_t numel = static_cast<uint64_t>(t.dims[0] * t.dims[1]);
  std::vector<float> out(numel);
  RETURN_IF_ERROR(ir::ConvertFloats(t.dtype, t.data.data(), ir::DType::kF32,
                                    reinterpret_cast<uint8_t*>(out.data()), numel));
  return out;
}


// GPTQ of matrix `name` on its target's ggml grid, from the X^T X of its
// input over `rows` rows and its columns' mean x^2 (the grid's importance,
// kept in `importance` under the GGUF name); the codes go to
// options->encoded. Returns the weights as llama.cpp will decode them.
absl::StatusOr<std::vector<float>> EncodeOne(const ir::Tensor& t,
                                             const gguf_export::MatrixTarget& target,
                                             const std::vector<double>& xtx, uint64_t rows,
                                             std::vector<float> mean_sq,
                                             const GgufGptqRequest& request,
                                             gguf_export::GgufImportance& importance,
                                             gguf_export::GgufExportOptions* options) {
  const int64_t n_rows = t.dims[0], cols = t.dims[1];
  ASSIGN_OR_RETURN(std::vector<float> w, ValuesF32(t));
  std::vector<float>& columns = importance.columns[target.gguf_name];
  columns = std::move(mean_sq);
  GgmlGptqGrid grid(target.type, n_rows, cols, columns.data());
  quant::GptqOptions go;
  go.percdamp = request.percdamp;
  go.block_size = request.block_size;
  go.threads = request.threads;
  RETURN_IF_ERROR(Annotate(quant::QuantizeGptqOnGrid(w.data(), n_rows, cols, xtx, rows, go, grid),
                           absl::StrCat("gptq of tensor '", t.name, "' as ",
                                        std::string(gguf::TypeName(target.type)))));
  gguf_export::PreEncodedMatrix& enc = options->encoded[t.name];
  enc.type = target.type;
  enc.rows = grid.TakeBytes();
  RETURN_IF_ERROR(gguf::DequantizeRow(target.type, enc.rows.data(), n_rows * cols, w.data()));
  return w;
}

// Every weight from its entry in a Hessian file (mean x x^T of the float
// model's input: its diagonal is the columns' mean x^2), in any order.
absl::Status EncodeFromHessians(
    const ir::Model& model, const std::vector<std::string>& weights,
    const std::map<std::string, const gguf_export::MatrixTarget*>& by_tensor,
    const GgufGptqRequest& request, gguf_export::GgufImportance& importance,
    gguf_export::GgufExportOptions* options) {
  const quantize::HessianSource& h = *request.hessians;
  for (size_t i = 0; i < weights.size(); ++i) {
    const std::string& name = weights[i];
    const ir::Tensor& t = *model.graph.FindInitializer(name);
    const std::optional<int64_t> k = h.Columns(name);
    if (!k) {
      return absl::InvalidArgumentError(absl::StrCat(
          h.file(), ": has no Hessian for '", name, "', which GPTQ quantizes to ",
          std::string(gguf::TypeName(by_tensor.at(name)->type)),
          " (statistics made for another model or with fewer layers?)"));
    }
    RETURN_IF_ERROR(quantize::CheckHessianWidth(h, name, *k, t.dims[1]));
    ASSIGN_OR_RETURN(quantize::LinearHessian lh, h.Read(name));
    std::vector<float> mean_sq(static_cast<size_t>(*k));
    const double n = static_cast<double>(lh.rows);
    for (int64_t c = 0; c < *k; ++c) {
      mean_sq[c] = static_cast<float>(lh.xtx[c * *k + c] / n);
    }
    RETURN_IF_ERROR(EncodeOne(t, *by_tensor.at(name), lh.xtx, lh.rows, std::move(mean_sq),
                              request, importance, options)
                        .status());
    if (request.progress) {
      request.progress(support::ProgressEvent{"gptq", static_cast<int64_t>(i + 1),
                                              static_cast<int64_t>(weights.size()), "weights",
                                              name});
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EncodeMatricesWithGptq(const ir::Model& model, const GgufGptqRequest& request,
                                    gguf_export::GgufExportOptions* options) {
  ASSIGN_OR_RETURN(const std::vector<gguf_export::MatrixTarget> targets,
                   gguf_export::PlanMatrixTypes(model, *options, /*with_importance=*/true));
  ASSIGN_OR_RETURN(ir::Model decoder, hf::BuildDecoderGraph(model));
  std::set<std::string> linears;
  for (const calibration::LinearLayer& l : calibration::FindLinearLayers(decoder.graph)) {
    linears.insert(l.weight);
  }
  std::map<std::string, const gguf_export::MatrixTarget*> by_tensor;
  std::vector<std::string> weights;
  for (const gguf_export::MatrixTarget& t : targets) {
    const ir::Tensor* src = model.graph.FindInitializer(t.tensor);
    // A block type and a matmul reading it: the tied embedding is both a
    // lookup and the output, and keeps ggml's encoder.
    if (gguf::BlockSize(t.type) <= 1 || !linears.count(t.tensor) || src == nullptr ||
        src->role == ir::WeightRole::kEmbedding) {
      continue;
    }
    by_tensor[t.tensor] = &t;
    weights.push_back(t.tensor);
  }
  gguf_export::GgufImportance importance;
  if (request.hessians) {
    importance.file = request.hessians->file();
    importance.dataset = request.hessians->dataset();
    importance.chunks = request.hessians->samples();
    RETURN_IF_ERROR(
        EncodeFromHessians(model, weights, by_tensor, request, importance, options));
    options->importance = std::move(importance);
    options->encoded_by = "gptq on the ggml grid";
    return absl::OkStatus();
  }
  importance.file = "slimpack --algo gptq --calib";
  importance.dataset = absl::StrJoin(request.calib, ",");
  ASSIGN_OR_RETURN(calibration::Dataset data,
                   quantize::OpenCalibrationData(decoder, request.calib));
  quantize::LayerwiseGptqOptions lo;
  lo.max_runs = request.calib_samples;
  lo.threads = request.threads;
  lo.progress = request.progress;
  lo.log = request.log;
  RETURN_IF_ERROR(quantize::RunLayerwiseGptq(
      model, weights, data, lo,
      [&](const std::string& name,
          const quantize::CapturedInput& c) -> absl::StatusOr<ir::Tensor> {
        const ir::Tensor& t = *model.graph.FindInitializer(name);
        if (t.dims.size() != 2 || t.dims[1] != c.layer.in_features) {
          return absl::InternalError(absl::StrCat(name, ": ", t.dims.size(),
                                                  "-D weight, linear input of ",
                                                  c.layer.in_features));
        }
        // What later layers see: the weights as llama.cpp will decode them.
        ASSIGN_OR_RETURN(std::vector<float> w,
                         EncodeOne(t, *by_tensor.at(name), c.xtx, c.rows,
                                   std::vector<float>(c.mean_sq.begin(), c.mean_sq.end()),
                                   request, importance, options));
        return quantize::F32Like(t, w);
      }));
  // llama-quantize's chunks_count: the calibration windows that ran.
  ASSIGN_OR_RETURN(importance.chunks, data.CountSamples(request.calib_samples));
  options->importance = std::move(importance);
  options->encoded_by = "gptq on the ggml grid";
  return absl::OkStatus();
}

}  // namespace slimpack::converter
