// Which weights get quantized, and how: scheme names ("int8", "int4-g128",
// "int4-g32-asym", "f16", "keep"), the quantization section of a recipe
// (defaults, first-match-wins rules by tensor-name regex / op / role,
// algorithm options), and the per-tensor plan it yields for a model.
//
// Recipe JSON ("quant" object of a recipe file; every key optional):
//   {"scheme": "int4-g128", "algorithm": "gptq", "mse_clip": false,
//    "calib_samples": 64,
//    "gptq": {"damp": 0.01, "block": 128, "act_order": false},
//    "awq": {"grid": 20},
//    "rules": [{"match": "lm_head|embed_tokens", "scheme": "int8"},
//              {"op": "Linear", "role": "down_proj", "scheme": "int4-g32"},
//              {"match": "layers\\.0\\.", "scheme": "keep"}]}
// A rule matches when every key it has matches (`match` is an ECMAScript
// regex searched in the tensor name; `op` the consuming op kind; `role` the
// HF weight role); the first matching rule decides; tensors no rule matches
// get `scheme`. Unknown keys are errors naming the key and the file.
#ifndef SLIMPACK_QUANTIZE_QUANT_RULES_H_
#define SLIMPACK_QUANTIZE_QUANT_RULES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "nlohmann/json.hpp"
#include "quantize/numerics/quant_types.h"

namespace slimpack::quantize {

// How one tensor is stored.
struct WeightScheme {
  enum class Kind { kKeep, kFloat, kInt };
  Kind kind = Kind::kKeep;
  ir::DType float_dtype = ir::DType::kUndefined;  // kFloat: f32/f16/bf16
  int bits = 0;                                   // kInt: 8 or 4 (2..8)
  int64_t group_size = 0;  // kInt: elements per group (0: per row)
  bool symmetric = true;
  // kInt: how the scales are stored. f16 for every grouped scheme unless
  // the name says "-f32scale"; f32 for one scale per row unless
  // "-f16scale" (a row's scale costs nothing next to its weights).
  quant::ScaleDType scale_dtype = quant::ScaleDType::kF32;

  // Canonical name: "keep", "f16", "int8", "int8-asym", "int8-g32",
  // "int4-g128", "int4-g32-asym", "int4-row" (group = whole row), with
  // "-f32scale" / "-f16scale" when the scale dtype is not the default.
  std::string Name() const;
  // The numerics' view of a kInt scheme (bits, groups, symmetry, scales).
  quant::Scheme Numerics() const {
    return quant::Scheme{bits, group_size, symmetric, scale_dtype};
  }
  bool operator==(const WeightScheme& o) const {
    return kind == o.kind && float_dtype == o.float_dtype && bits == o.bits &&
           group_size == o.group_size && symmetric == o.symmetric &&
           scale_dtype == o.scale_dtype;
  }
};

// The scale dtype a scheme gets when its name does not choose one.
quant::ScaleDType DefaultScaleDType(int64_t group_size);

// The suffixes that choose a scheme's scale dtype, and the one `name` ends
// in (empty if none): "int4-g32-f32scale" -> "-f32scale".
inline constexpr std::string_view kF16ScaleSuffix = "-f16scale";
inline constexpr std::string_view kF32ScaleSuffix = "-f32scale";
std::string_view ScaleSuffixOf(std::string_view name);

// Parses a scheme name. "int4" takes `default_group` (128 unless set);
// "int8" alone is per output channel.
// InvalidArgument naming the text and listing the forms.
absl::StatusOr<WeightScheme> ParseWeightScheme(std::string_view text,
                                               int64_t default_group = 128);

enum class Algorithm { kRtn, kRtnMse, kImatrix, kGptq, kAwq };
std::string_view AlgorithmName(Algorithm a);
// "rtn" | "rtn-mse" | "imatrix" | "gptq" | "awq".
absl::StatusOr<Algorithm> ParseAlgorithm(std::string_view text);
// imatrix, GPTQ and AWQ need calibration data.
bool NeedsCalibration(Algorithm a);

struct QuantRule {
  std::string match;  // regex (empty: any name)
  std::string op;     // "Linear", "MatMul", "Gemm", "Conv", "Gather" or ""
  std::string role;   // ir::WeightRoleName value or ""
  std::optional<WeightScheme> scheme;
  std::optional<Algorithm> algorithm;
  int index = 0;      // position in the recipe, for messages
  std::string reason; // free text kept with the rule (e.g. from slimpack report)
};

struct QuantConfig {
  std::optional<WeightScheme> scheme;  // default for unmatched weights
  Algorithm algorithm = Algorithm::kRtn;
  bool mse_clip = false;
  int64_t calib_samples = 64;  // calibration runs (rows of token windows)
  double gptq_damp = 0.01;
  int64_t gptq_block = 128;
  bool gptq_act_order = false;
  int awq_grid = 20;
  std::vector<QuantRule> rules;
  // "scheme": "w8a8": static activation quantization (uint8 activations,
  // int8 per-channel weights, int32 bias) from a calibration table.
  bool w8a8 = false;
  std::string calib_method = "minmax";  // w8a8 ranges: minmax|percentile|entropy|mse
  std::string keep_float;               // w8a8: node-name regex kept FP32
  bool w8a8_int8_activations = false;   // w8a8: "activation_type": "int8"
  // Size-target planner (size_planner.h): weights no rule matched get the
  // candidate scheme that minimises total estimated error under the target.
  std::optional<uint64_t> target_bytes;   // "target_size": "3.8GB" or bytes
  std::optional<double> target_bpw;       // "target_bpw": 4.5
  std::vector<WeightScheme> candidates;   // "candidates"; empty: defaults
  bool has_target() const { return target_bytes.has_value() || target_bpw.has_value(); }

  bool active() const;  // anything to do at all
};

// Parses the recipe's "quant" object. `file` prefixes errors.
absl::StatusOr<QuantConfig> ParseQuantConfig(const nlohmann::json& j,
                                             const std::string& file);
// The canonical JSON recorded in the manifest's producer.recipe.
nlohmann::json QuantConfigToJson(const QuantConfig& c);

// A constant weight and how the graph (or architecture) uses it.
struct WeightUse {
  std::string tensor;
  std::string op;     // "Linear" (HF), "MatMul", "Gemm", "Conv", "Gather"
  std::string node;   // consuming node ("" for HF checkpoints)
  // The tensor is [in, out] (ONNX MatMul B, Gemm B without transB): the
  // quantizer's rows (output channels) are its columns.
  bool transposed = false;
};

// Eligible weights of `model`, in initializer order: for HF checkpoints
// the tensors whose role is a linear projection, lm_head or embedding; for
// graphs the float initializers used only as MatMul/Gemm B (rank 2), Conv W
// (rank >= 3) or Gather data (rank 2, axis 0), each in one orientation.
// `skipped` (optional) receives "name: reason" for float initializers of
// rank >= 2 that were left alone.
std::vector<WeightUse> FindQuantizableWeights(const ir::Model& model,
                                              std::vector<std::string>* skipped);

struct TensorPlan {
  WeightUse use;
  WeightScheme scheme;
  Algorithm algorithm = Algorithm::kRtn;
  int rule = -1;       // index of the deciding rule, -1: the default
  std::string note;    // e.g. "Conv weights are int8 per channel: int4 asked"
};

// Applies the config to every eligible weight. Conv weights asked for
// 4-bit fall back to int8 per channel (noted): the group-wise layout groups
// along input channels only, which does not fit a spatial kernel.
absl::StatusOr<std::vector<TensorPlan>> PlanWeights(const ir::Model& model,
                                                    const QuantConfig& config);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_QUANT_RULES_H_
