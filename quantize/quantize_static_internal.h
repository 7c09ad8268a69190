// Pieces of quantize-static (quantize_static.h) that live in more than one
// file: the per-node plan (made in quantize_static_plan.cc), the spec numerics
// for activation parameters, int8 weights and int32 bias
// (quantize_static_numerics.cc), and the range lookup both the planner and the
// rewrite in quantize_static.cc need. Internal to slimpack_quantize.
#ifndef SLIMPACK_QUANTIZE_QUANTIZE_STATIC_INTERNAL_H_
#define SLIMPACK_QUANTIZE_QUANTIZE_STATIC_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/calibration_table.h"
#include "ir/graph.h"
#include "quantize/numerics/quant_types.h"
#include "support/regex.h"

// Its own namespace rather than passes::internal: these names (Plan, Kind)
// are generic enough to clash with another pass's helpers.
namespace slimpack::passes::static_quant_internal {

enum class Kind { kFloat, kConv, kLinear };

// How a fused activation is carried out.
enum class ActMode { kNone, kFolded, kFloatAfter };

struct Plan {
  Kind kind = Kind::kFloat;
  std::string reason;        // for kFloat
  ActMode act = ActMode::kNone;
  std::string activation;    // op type of the fused activation
  std::vector<float> act_params;
  // kConv: the value the QLinearConv writes (the node output when folded,
  // the pre-activation table entry otherwise) and its range.
  std::string quant_value;
  double out_lo = 0, out_hi = 0;
  bool trans_b = false;      // kLinear
};

// The calibrated [lo, hi] of `value`; nullopt when the table has no entry,
// an empty one, or a non-finite bound.
std::optional<std::pair<double, double>> TableRange(
    const calibration::CalibrationTable& table, const std::string& value);

// What to do with `node`. Non-candidates get kFloat with an empty reason;
// candidates kept float get kFloat with the reason. An integer plan whose
// input has no table range keeps its kind but carries that reason: the
// caller settles it, since an integer producer may quantize that input.
Plan PlanNode(const ir::Graph& graph, const ir::UseDefIndex& index, const ir::Node& node,
              const calibration::CalibrationTable& table,
              const std::optional<support::Regex>& keep_re);

// Activation scale/zero point for the range [lo, hi] widened to hold 0.
std::pair<float, int32_t> ChooseParams(double lo, double hi, ir::DType t);

// Int8 symmetric per-row quantization of row-major [rows, cols] through
// quant::QuantizeRtn (bits 8, one group per row); errors name the weight.
absl::StatusOr<quant::QuantizedMatrix> QuantizeRows(const std::vector<float>& w,
                                                    int64_t rows, int64_t cols,
                                                    const std::string& name);

// The int32 bias code: b / scale rounded to nearest and saturated.
int32_t QuantizeBias(float b, float scale);

}  // namespace slimpack::passes::static_quant_internal

#endif  // SLIMPACK_QUANTIZE_QUANTIZE_STATIC_INTERNAL_H_
