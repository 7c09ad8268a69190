// Structured channel pruning of an ONNX-imported graph: channel groups
// (prune/graph/prune_graph.h), importance and removal (prune/graph/prune_graph_apply.h),
// with the calibration capture the activation criterion and refit need.
// The graph counterpart of prune::PruneDecoder, with the same options.
#ifndef SLIMPACK_PRUNE_GRAPH_PRUNE_ONNX_H_
#define SLIMPACK_PRUNE_GRAPH_PRUNE_ONNX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "nlohmann/json.hpp"
#include "prune/graph/prune_graph_apply.h"
#include "prune/decoder/prune_structured.h"

namespace slimpack::prune {

struct GraphGroupStats {
  std::string name;
  int64_t channels = 0, kept = 0;
  bool prunable = false;
};

struct GraphPruneResult {
  bool changed = false;
  uint64_t params_before = 0, params_after = 0;
  std::vector<GraphGroupStats> groups;
  // "group NAME: reason" for every unprunable group (shown by -v).
  std::vector<std::string> unprunable;
  std::vector<std::string> refit;  // consumer weights refit
  nlohmann::json ToJson() const;   // stats of the producer.passes record
};

// Captures, for every weight in `weights` (a Conv/Gemm/MatMul weight named
// in groups.weight_nodes), its node's input statistics over up to
// `max_runs` runs of `calib_paths`; X^T X only for `xtx_weights` with at
// most `max_xtx_features` inputs. Errors name the dataset file or the node.
absl::StatusOr<WeightInputs> CaptureWeightInputs(const ir::Model& model,
                                                 const ChannelGroups& groups,
                                                 const std::vector<std::string>& weights,
                                                 const std::vector<std::string>& xtx_weights,
                                                 const std::vector<std::string>& calib_paths,
                                                 int64_t max_runs, int threads);

// Prunes the channels of `model.graph` in place (options.target is not
// used: every prunable group gets the same ratio). Ratio 0 leaves the model
// untouched. InvalidArgument for a ratio outside [0, 1); FailedPrecondition
// naming --calib when activation or refit needs data and none is given;
// Internal if the pruned graph fails ir::VerifyGraph.
absl::StatusOr<GraphPruneResult> PruneGraph(ir::Model& model, const PruneOptions& options);

}  // namespace slimpack::prune

#endif  // SLIMPACK_PRUNE_GRAPH_PRUNE_ONNX_H_
