// Float weights of any width are compared in f32 (RtTensor::FromIr widens
// f16/bf16 exactly), so an f16 candidate's error is its rounding error.
#include "report/weight_diff.h"

#include "report/layer_match.h"
#include "runtime/rt_tensor.h"
#include "ir/quant.h"
#include "support/status_macros.h"

namespace slimpack::report {

std::string SchemeName(const ir::Tensor& t) {
  switch (t.quant.kind) {
    case ir::QuantKind::kInt8PerChannel:
      return "int8-per-channel";
    case ir::QuantKind::kInt4GroupWise:
      return "int4-g" + std::to_string(t.quant.group_size);
    case ir::QuantKind::kInt8GroupWise:
      return "int8-g" + std::to_string(t.quant.group_size);
    case ir::QuantKind::kGgmlBlocks:
      return std::string(ir::GgmlTypeName(t.quant.block_type));
    case ir::QuantKind::kFp8E4M3GroupWise:
      // A checkpoint's two-axis blocks as rows x columns ("fp8-e4m3-128x128").
      return t.quant.BlockRows() > 1 ? "fp8-e4m3-" + std::to_string(t.quant.block_rows) + "x" +
                                           std::to_string(t.quant.group_size)
                                     : "fp8-e4m3-g" + std::to_string(t.quant.group_size);
    case ir::QuantKind::kNone:
      break;
  }
  return std::string(ir::DTypeName(t.dtype));
}

double BitsPerWeight(const ir::Tensor& t, const ir::Graph& graph) {
  auto n = t.NumElements();
  if (!n.ok() || *n == 0) return 0;
  if (!t.quant.quantized()) return ir::DTypeBits(t.dtype);
  double bytes = 0;
  if (auto b = t.ExpectedBytes(); b.ok()) bytes += static_cast<double>(*b);
  for (const std::string* aux : {&t.quant.scale, &t.quant.zero_point}) {
    if (aux->empty()) continue;
    if (const ir::Tensor* s = graph.FindInitializer(*aux)) {
      if (auto b = s->ExpectedBytes(); b.ok()) bytes += static_cast<double>(*b);
    }
  }
  return bytes * 8.0 / static_cast<double>(*n);
}

absl::StatusOr<ir::Tensor> DequantizedWeight(const ir::Tensor& q, const ir::Graph& graph) {
  const ir::Tensor* scale =
      q.quant.scale.empty() ? nullptr : graph.FindInitializer(q.quant.scale);
  const ir::Tensor* zp =
      q.quant.zero_point.empty() ? nullptr : graph.FindInitializer(q.quant.zero_point);
  if (scale == nullptr && q.quant.kind != ir::QuantKind::kGgmlBlocks) {
    return absl::InvalidArgumentError("weight '" + q.name + "': scale tensor '" + q.quant.scale +
                                      "' not found");
  }
  return ir::DequantizeTensor(q, scale, zp);
}

absl::StatusOr<std::vector<WeightReport>> CompareWeights(const ir::Graph& reference,
                                                         const ir::Graph& candidate) {
  std::vector<WeightReport> out;
  for (const ir::Tensor& ref : reference.initializers()) {
    if (!IsWeight(ref)) continue;
    const ir::Tensor* cand = candidate.FindInitializer(ref.name);
    if (cand == nullptr) continue;
    WeightReport w;
    w.name = ref.name;
    w.scheme = SchemeName(*cand);
    w.dims = cand->dims;
    ASSIGN_OR_RETURN(uint64_t n, ref.NumElements());
    w.elements = static_cast<int64_t>(n);
    w.bits_per_weight = BitsPerWeight(*cand, candidate);
    w.reference_bits_per_weight = BitsPerWeight(ref, reference);
    ir::Tensor dequantized;
    if (cand->quant.quantized()) {
      absl::StatusOr<ir::Tensor> d = DequantizedWeight(*cand, candidate);
      if (!d.ok()) {
        w.note = "quantized (" + w.scheme + "), not compared: " + std::string(d.status().message());
        out.push_back(std::move(w));
        continue;
      }
      dequantized = *std::move(d);
      cand = &dequantized;
    }
    if (cand->dims != ref.dims) {
      // Pruned or reshaped: the same name no longer holds the same values.
      w.note = "shape " + runtime::DimsToString(cand->dims) + " differs from the reference's " +
               runtime::DimsToString(ref.dims) + ": not compared";
      out.push_back(std::move(w));
      continue;
    }
    ASSIGN_OR_RETURN(runtime::RtTensor r, runtime::RtTensor::FromIr(ref));
    ASSIGN_OR_RETURN(runtime::RtTensor c, runtime::RtTensor::FromIr(*cand));
    if (r.dtype() != ir::DType::kF32 || c.dtype() != ir::DType::kF32) {
      w.note = "not an f32/f16/bf16 tensor: not compared";
    } else {
      w.compared = true;
      w.error.Add(r.data<float>(), c.data<float>(), r.num_elements());
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace slimpack::report
