// FP8 checkpoints (prequantized.h, ImportFp8): E4M3 weights as the
// safetensors reader marked them, given their scales as
// fp8_e4m3_groupwise weights. The codes stay the checkpoint's bytes.
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "formats/safetensors/prequantized.h"
#include "formats/safetensors/prequantized_grid.h"
#include "ir/float_convert.h"
#include "ir/shape.h"
#include "support/status_macros.h"

namespace slimpack::safetensors {
namespace {

using prequant_internal::Where;

std::string Dims(const std::vector<int64_t>& d) { return ir::Shape::FromDims(d).ToString(); }

int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

// The block [rows, cols] one scale covers in this weight, and the scale
// shapes the checkpoint may use for it.
struct Block {
  int64_t rows, cols;
  std::vector<std::vector<int64_t>> shapes;
};

Block BlockOf(const PrequantConfig& c, int64_t out, int64_t in) {
  Block b{c.fp8_block_rows > 0 ? c.fp8_block_rows : out,
          c.fp8_block_cols > 0 ? c.fp8_block_cols : in, {}};
  const int64_t gr = CeilDiv(out, b.rows), gc = CeilDiv(in, b.cols);
  b.shapes.push_back({gr, gc});
  if (gc == 1) b.shapes.push_back({gr});  // [out] channel, [1] tensor
  if (gr == 1 && gc == 1) b.shapes.push_back({});  // a scalar
  return b;
}

absl::StatusOr<std::vector<ir::Tensor>> ScaleOne(const PrequantConfig& c, const ir::Tensor& w,
                                                 const ir::Tensor& s) {
  if (w.dims.size() != 2 || w.dims[0] < 1 || w.dims[1] < 1) {
    return absl::InvalidArgumentError(Where(w) + ": F8_E4M3 weight of shape " + Dims(w.dims) +
                                      " (supported: a non-empty [out, in] matrix)");
  }
  const int64_t out = w.dims[0], in = w.dims[1];
  const Block b = BlockOf(c, out, in);
  bool shape_ok = false;
  for (const auto& want : b.shapes) shape_ok = shape_ok || s.dims == want;
  if (!shape_ok) {
    return absl::InvalidArgumentError(
        Where(s) + ": shape " + Dims(s.dims) + ", expected " + Dims(b.shapes[0]) + " for " +
        Dims(w.dims) + " in blocks of " + std::to_string(b.rows) + " x " +
        std::to_string(b.cols) + " (" + c.source + ")");
  }
  if (s.dtype != ir::DType::kF32 && s.dtype != ir::DType::kF16 && s.dtype != ir::DType::kBF16) {
    return absl::InvalidArgumentError(Where(s) + ": dtype " + std::string(ir::DTypeName(s.dtype)) +
                                      " (supported: F32, F16, BF16)");
  }
  const int64_t gc = CeilDiv(in, b.cols);
  // The scales widened once (exact for f16/bf16); the shape check above
  // bounds their count.
  std::vector<float> scales(static_cast<size_t>(CeilDiv(out, b.rows) * gc));
  RETURN_IF_ERROR(ir::ConvertFloats(s.dtype, s.data.data(), ir::DType::kF32,
                                    reinterpret_cast<uint8_t*>(scales.data()), scales.size()));
  for (int64_t k = 0; k < static_cast<int64_t>(scales.size()); ++k) {
    const float v = scales[static_cast<size_t>(k)];
    if (!(v > 0) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(Where(s) + ": scale " + std::to_string(v) +
                                        " at block (" + std::to_string(k / gc) + ", " +
                                        std::to_string(k % gc) +
                                        ") (scales must be finite and positive)");
    }
  }
  const uint8_t* q = w.data.data();
  for (uint64_t i = 0; i < static_cast<uint64_t>(out * in); ++i) {
    if ((q[i] & 0x7F) == 0x7F) {
      return absl::InvalidArgumentError(
          Where(w) + ": NaN code 0x" + (q[i] == 0xFF ? std::string("FF") : std::string("7F")) +
          " at [" + std::to_string(i / static_cast<uint64_t>(in)) + ", " +
          std::to_string(i % static_cast<uint64_t>(in)) + "]");
    }
  }
  // Scales [ceil(out / rows), gc] as the checkpoint has them (a scalar or
  // [out] shape is the same count in that order); rows sharing a block's
  // scale are the layout's block_rows. bf16 is widened to f32 (exact).
  const bool f16 = s.dtype == ir::DType::kF16;
  const int64_t gr = CeilDiv(out, b.rows);
  std::vector<uint8_t> bytes(static_cast<size_t>(gr * gc) * (f16 ? 2 : 4));
  if (f16) {
    std::memcpy(bytes.data(), s.data.data(), bytes.size());
  } else {
    std::memcpy(bytes.data(), scales.data(), bytes.size());
  }
  std::vector<ir::Tensor> result(2);
  ir::Tensor& weight = result[0];
  weight = w;
  weight.quant = ir::QuantLayout{};
  weight.quant.kind = ir::QuantKind::kFp8E4M3GroupWise;
  weight.quant.axis = 1;
  weight.quant.group_size = b.cols;
  if (b.rows > 1) weight.quant.block_rows = b.rows;
  weight.quant.scale = w.name + ".scale";
  weight.quant.algorithm = c.fp8_scale_suffix == ".weight_scale_inv" ? "fp8-checkpoint"
                                                                      : "compressed-tensors-checkpoint";
  ir::Tensor& scale = result[1];
  scale.name = weight.quant.scale;
  scale.dtype = f16 ? ir::DType::kF16 : ir::DType::kF32;
  scale.dims = {gr, gc};
  scale.provenance = s.provenance;
  scale.data = ir::TensorData::Owned(std::move(bytes));
  return result;
}

}  // namespace

absl::Status ImportFp8(const PrequantConfig& c, std::vector<ir::Tensor>& tensors) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tensors.size(); ++i) index[tensors[i].name] = i;
  std::set<std::string> scales_used;
  std::map<size_t, std::vector<ir::Tensor>> replaced;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ir::Tensor& w = tensors[i];
    if (w.quant.kind != ir::QuantKind::kFp8E4M3GroupWise || !w.quant.scale.empty()) continue;
    if (!absl::EndsWith(w.name, ".weight")) {
      return absl::InvalidArgumentError(Where(w) + ": dtype F8_E4M3 on a tensor that is not a "
                                        "'<module>.weight' (" + c.source + ")");
    }
    const std::string prefix = w.name.substr(0, w.name.size() - 7);
    auto s = index.find(prefix + c.fp8_scale_suffix);
    if (s == index.end()) {
      return absl::InvalidArgumentError(Where(w) + " has no '" + prefix + c.fp8_scale_suffix +
                                        "' beside it (" + c.source + ")");
    }
    ASSIGN_OR_RETURN(replaced[i], ScaleOne(c, w, tensors[s->second]));
    scales_used.insert(s->first);
  }
  if (replaced.empty()) {
    return absl::InvalidArgumentError(c.source + " says the weights are FP8 but no tensor has "
                                      "dtype F8_E4M3");
  }
  std::vector<ir::Tensor> kept;
  for (size_t i = 0; i < tensors.size(); ++i) {
    ir::Tensor& t = tensors[i];
    if (scales_used.count(t.name)) continue;
    if (absl::EndsWith(t.name, c.fp8_scale_suffix)) {
      return absl::InvalidArgumentError(Where(t) + " is not read: no F8_E4M3 '" +
                                        t.name.substr(0, t.name.size() - c.fp8_scale_suffix.size()) +
                                        ".weight' beside it");
    }
    auto r = replaced.find(i);
    if (r == replaced.end()) {
      kept.push_back(std::move(t));
    } else {
      for (ir::Tensor& u : r->second) kept.push_back(std::move(u));
    }
  }
  tensors = std::move(kept);
  return absl::OkStatus();
}

}  // namespace slimpack::safetensors
