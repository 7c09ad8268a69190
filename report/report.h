// The accuracy-diff report: what `slimpack report` measures when it runs a
// reference model and a candidate (compressed) model on the same inputs,
// per layer, per weight and end to end, plus the one-layer-at-a-time
// sensitivity ranking and the proposed fallback set. Rendered to JSON
// (docs/report-schema.md), Markdown and HTML by render.h.
#ifndef SLIMPACK_REPORT_REPORT_H_
#define SLIMPACK_REPORT_REPORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/dataset.h"
#include "runtime/kernel_registry.h"
#include "calibration/calibration_table.h"
#include "report/metrics.h"
#include "report/pruning.h"
#include "ir/graph.h"
#include "support/progress.h"

namespace slimpack::report {

inline constexpr int kReportSchemaVersion = 1;

// One layer: a candidate node that reads a weight (a float initializer of
// two or more elements), compared at its first output.
struct LayerReport {
  int64_t depth = 0;  // position among the candidate's layers
  std::string node;   // candidate node name
  std::string op_type;
  std::string output;  // candidate value compared
  std::string reference_output;
  std::string matched_by;                 // "name" | "provenance"
  std::vector<std::string> source_nodes;  // provenance of the candidate node
  std::vector<std::string> weights;       // initializer inputs
  // The node fuses two or more reference nodes that read weights (e.g.
  // Conv + BatchNormalization): its weights were folded, so they are not
  // comparable with the reference's tensors of the same name, and the
  // layer is left out of the sensitivity ranking and the fallback set.
  bool weights_folded = false;
  // Candidate output vs reference output, both models run end to end: the
  // error this layer has, whoever introduced it.
  TensorErrorStats propagated;
  // The candidate node alone on the reference's activations: the error
  // this layer introduces. Absent for nodes with subgraphs.
  bool has_quant_only = false;
  TensorErrorStats quant_only;
  // Inputs the reference does not have (renamed by a fusion or produced by
  // candidate-only nodes such as DequantizeLinear on a weight), fed from
  // the candidate's own run.
  std::vector<std::string> inputs_from_candidate;
  // One-layer-at-a-time sensitivity (reference model with only this
  // layer's weights taken from the candidate), in the report's
  // sensitivity metric; rank 1 = most harmful.
  std::optional<double> sensitivity;
  int64_t sensitivity_rank = 0;
};

struct WeightReport {
  std::string name;
  std::string scheme;  // "f32", "f16", "bf16", "int8-per-channel", "int4-g128"
  std::vector<int64_t> dims;
  int64_t elements = 0;
  double bits_per_weight = 0;  // candidate storage, scales included
  double reference_bits_per_weight = 0;
  bool compared = false;
  std::string note;  // why not compared
  TensorErrorStats error;
  // What the candidate's own file recorded when it was written: a GGUF
  // slimpack encoded from an already-quantized source gives each tensor it
  // had to encode again the relative L2 that added (gguf_requantized.h).
  std::optional<double> recorded_rel_l2;
};

struct EndToEndReport {
  std::string task;  // "lm" | "classifier" | "generic"
  int64_t runs = 0;
  int64_t samples = 0;      // rows (windows for an LM, images for a classifier)
  TensorErrorStats output;  // all float graph outputs
  std::optional<NextTokenStats::Summary> lm;
  int64_t lm_window = 0;
  bool classifier = false;
  ClassifierStats classes;
};

struct FallbackAdvice {
  std::string metric;  // the sensitivity metric
  double before = 0;   // candidate, on the sensitivity subset
  double after = 0;    // candidate with the layers below at reference precision
  double extra_bytes = 0;
  std::vector<std::string> layers;   // candidate node names
  std::vector<std::string> weights;  // their weight tensors (recipe rules)
};

struct GateRuleResult {
  std::string rule;  // as written
  bool passed = true;
  std::optional<double> value;                            // e2e rules
  std::vector<std::pair<std::string, double>> offenders;  // layer/weight rules
  std::string message;
};

struct Report {
  std::string reference_name, reference_sha256;
  std::string candidate_name, candidate_sha256;
  std::vector<calibration::DataFileDigest> inputs;
  std::string calibration_table;  // base name, "" if none
  int num_threads = 1;
  std::vector<LayerReport> layers;
  std::vector<WeightReport> weights;
  EndToEndReport end_to_end;
  std::string sensitivity_metric;  // "mean_kld" | "output_rel_l2"
  int64_t sensitivity_runs = 0;
  std::optional<FallbackAdvice> fallback;
  std::vector<std::string> unmatched_layers;  // candidate layers not found in the reference
  std::vector<std::string> notes;             // debugging checklist findings
  std::vector<GateRuleResult> gate;           // empty when no --gate
  // Structured pruning of the candidate (its artifact's prune record);
  // filled by the caller (ReadCandidatePruning), not by BuildReport.
  std::optional<PruningSummary> pruning;
  bool gate_passed() const;
};

struct ReportOptions {
  int num_threads = 1;
  int64_t max_runs = 0;            // 0: the whole dataset
  int64_t sensitivity_runs = 2;    // subset for ranking and fallback; 0 disables
  int64_t sensitivity_layers = 0;  // 0: every layer whose weights differ
  int64_t max_fallback_layers = 3;
  // Labels of a classifier's samples in dataset order (empty: unlabelled).
  std::vector<int64_t> labels;
  // Calibrated ranges for the overflow and coverage checks.
  const calibration::CalibrationTable* calibration = nullptr;
  std::string calibration_name;
  // Kernels for both models (null: the interpreter's built-ins, which
  // include the slimpack.* fused and packed ops).
  std::shared_ptr<const runtime::KernelRegistry> kernels;
  // Stages "report" (compared runs; total known only with max_runs) and
  // "sensitivity" (layers swapped one at a time); null: silent.
  support::ProgressSink progress;
};

// Runs both models over `data` (opened for the reference's inputs) and
// fills everything but `gate`. InvalidArgument when the models do not
// match (graph inputs, output count, output shapes at run time), when the
// labels do not match the sample count, or the dataset is empty; errors of
// the interpreter pass through, naming the node.
absl::StatusOr<Report> BuildReport(const ir::Model& reference, const ir::Model& candidate,
                                   calibration::Dataset& data, const ReportOptions& options);

}  // namespace slimpack::report

#endif  // SLIMPACK_REPORT_REPORT_H_
