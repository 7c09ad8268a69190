// What structured pruning did to a candidate, for the accuracy report: read
// from the "prune" record of the candidate artifact's producer.passes
// (prune/decoder/prune_structured.h PruneResult::ToJson) and rendered by the JSON,
// Markdown and HTML writers.
#ifndef SLIMPACK_REPORT_PRUNING_H_
#define SLIMPACK_REPORT_PRUNING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace slimpack::report {

struct PrunedLayer {
  int64_t layer = 0;
  // Kept / before-pruning counts; a total of 0 means the record predates
  // totals (the ratio is then unknown).
  int64_t mlp_kept = 0, mlp_total = 0;
  int64_t heads_kept = 0, heads_total = 0;
  int64_t kv_heads_kept = 0, kv_heads_total = 0;
  uint64_t params_removed = 0, bytes_removed = 0;
  // kept / total, NaN when the total is unknown.
  double MlpKeptRatio() const;
  double HeadsKeptRatio() const;
};

// One channel group of an ONNX graph's prune record (prune/graph/prune_onnx.h
// GraphPruneResult::ToJson): producer node names, channels before, kept.
struct PrunedGroup {
  std::string name;
  int64_t channels = 0, kept = 0;
  bool prunable = true;
  double KeptRatio() const;
};

struct PruningSummary {
  std::string criterion, target;
  bool refit = false;
  uint64_t params_before = 0, params_after = 0, bytes_removed = 0;
  std::vector<PrunedLayer> layers;  // HF decoder records
  std::vector<PrunedGroup> groups;  // ONNX graph records (no "layers")
};

// The last "prune" record of `passes` (a producer.passes array), or nullopt
// when there is none or it changed nothing. InvalidArgument naming `source`
// and the key for a record whose stats are malformed.
absl::StatusOr<std::optional<PruningSummary>> PruningFromPasses(const nlohmann::json& passes,
                                                                const std::string& source);

// Reads `candidate`/manifest.json when `candidate` is an artifact directory
// (nullopt for other models, e.g. an .onnx file). Errors name the manifest.
absl::StatusOr<std::optional<PruningSummary>> ReadCandidatePruning(const std::string& candidate);

}  // namespace slimpack::report

#endif  // SLIMPACK_REPORT_PRUNING_H_
