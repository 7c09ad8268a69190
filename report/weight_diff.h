// Per-weight comparison: for every reference weight the candidate also
// has (same name), storage scheme, bits per weight and the error of the
// candidate's values against the reference's.
#ifndef SLIMPACK_REPORT_WEIGHT_DIFF_H_
#define SLIMPACK_REPORT_WEIGHT_DIFF_H_

#include <vector>

#include "absl/status/statusor.h"
#include "report/report.h"
#include "ir/graph.h"

namespace slimpack::report {

// "f32", "f16", "int8-per-channel", "int4-g128".
std::string SchemeName(const ir::Tensor& t);

// Bits of storage per element of `t`, counting its scale and zero-point
// tensors (found in `graph`) for quantized layouts.
double BitsPerWeight(const ir::Tensor& t, const ir::Graph& graph);

// The f32 values of quantized `q` (ir/quant.h's reference
// dequantization), its scale and zero point looked up in `graph`.
// InvalidArgument naming the tensor when they are missing or malformed.
absl::StatusOr<ir::Tensor> DequantizedWeight(const ir::Tensor& q, const ir::Graph& graph);

// Quantized candidate tensors are compared after dequantization; one that
// cannot be dequantized, or whose shape differs, is listed with
// compared = false and the reason.
absl::StatusOr<std::vector<WeightReport>> CompareWeights(const ir::Graph& reference,
                                                         const ir::Graph& candidate);

}  // namespace slimpack::report

#endif  // SLIMPACK_REPORT_WEIGHT_DIFF_H_
