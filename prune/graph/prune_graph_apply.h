// Scoring, selection and removal of channels found by BuildChannelGroups
// (prune/graph/prune_graph.h): slices every member tensor, fixes depthwise
// `group` attributes and value_info shapes, and optionally refits consumer
// weights by least squares (prune::RefitColumns) on captured inputs.
//
// Importance of channel c of a group (deterministic; ties keep the lower
// index, as in prune/decoder/prune_structured.h):
//   l1          sum |w| over the weight slices of c (rows of its producers,
//               input columns of its consumers)
//   l2          sqrt(sum w^2) over the same
//   activation  sum |w| * rms(x_j) over the same (x_j: the input feature of
//               the weight node the element multiplies: a Conv input
//               channel, a Gemm/MatMul input column)
// Vector members (biases, BatchNorm vectors, constants) are sliced but do
// not score: running means and variances are not on the weights' scale.
#ifndef SLIMPACK_PRUNE_GRAPH_PRUNE_GRAPH_APPLY_H_
#define SLIMPACK_PRUNE_GRAPH_PRUNE_GRAPH_APPLY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "prune/graph/prune_graph.h"
#include "prune/decoder/prune_structured.h"

namespace slimpack::prune {

// Statistics of the data input of one weight node (keyed by the weight's
// tensor name): per input feature sqrt(mean x^2), and for refit the
// unnormalised X^T X over every row (Conv: every output position).
struct WeightInput {
  std::vector<double> rms;
  std::vector<double> xtx;  // empty unless captured
};
using WeightInputs = std::map<std::string, WeightInput>;

// Importance of each channel of groups.groups[group]. `inputs` is read by
// kActivation only: Internal naming the weight when its statistics are
// missing; Unimplemented for a member tensor of a non-float dtype.
absl::StatusOr<std::vector<double>> ChannelImportance(const ir::Graph& graph,
                                                      const ChannelGroups& groups, int group,
                                                      Criterion criterion,
                                                      const WeightInputs& inputs);

// The channels to remove: floor(ratio * n) lowest scores (at most n - 1),
// ascending.
std::vector<int64_t> SelectRemoved(const std::vector<double>& score, double ratio);

// Whether `weight` (read by `node`) can be refit along its input features:
// Gemm (transA 0), MatMul with a rank-2 B, or a 1x1 group-1 Conv.
bool IsRefitConsumer(const ir::Node& node, const ir::Tensor& weight);

struct ApplyReport {
  std::vector<std::string> refit;  // consumer weights refit
};

// Removes `removed[g]` channels of group g from `graph`. With `refit`,
// every consumer weight that IsRefitConsumer and has X^T X in `inputs` is
// refit instead of merely sliced (damp as in PruneOptions). Errors are
// Internal (the groups do not describe this graph).
absl::StatusOr<ApplyReport> ApplyChannelPruning(ir::Graph& graph, const ChannelGroups& groups,
                                                const std::map<int, std::vector<int64_t>>& removed,
                                                bool refit, const WeightInputs& inputs,
                                                double damp);

}  // namespace slimpack::prune

#endif  // SLIMPACK_PRUNE_GRAPH_PRUNE_GRAPH_APPLY_H_
