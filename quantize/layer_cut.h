// Where to cut a graph between the calibration runs of consecutive weight
// groups (GPTQ's decoder layers), so each group's runs start from values
// cached by the run before instead of from the graph inputs.
//
// Group g's linear inputs must be those of the model whose groups < g are
// already quantized. Running the whole model once per group costs
// n_groups x n_layers layer evaluations; running group g from the values the
// quantized groups < g produced, cached once per group, costs 2 per group
// (one to capture group g, one to advance the cache through it quantized).
#ifndef SLIMPACK_QUANTIZE_LAYER_CUT_H_
#define SLIMPACK_QUANTIZE_LAYER_CUT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/linear_stats.h"
#include "ir/graph.h"

namespace slimpack::quantize {

// `groups[g]` names the weights (initializers) of group g, in run order.
// Returns, for each group g, the values to cache for it: those its runs
// (up to the outputs of the nodes reading its weights) read from the part of
// the graph that depends on the weights of groups < g. A cached value that
// can be recomputed from the other cached values without reading any group's
// weight (a norm of the cached residual stream) is left out; values that do
// not depend on earlier groups (positions, masks) are recomputed from the
// graph inputs. Empty for group 0. InvalidArgument naming a weight that no
// node reads, or a group whose nodes need a value nothing defines.
absl::StatusOr<std::vector<std::vector<std::string>>> CachedValuesPerGroup(
    const ir::Graph& graph, const std::vector<std::vector<std::string>>& groups);

// The outputs of the nodes that read any of `weights`, in node order: what
// a group's capture run computes.
std::vector<std::string> OutputsOfNodesReading(const ir::Graph& graph,
                                               const std::vector<std::string>& weights);

// The values a group's capture run computes: the inputs of the linears
// reading `weights` (the first of each weight's in `linears`, found on
// `graph`), not their outputs. The capture reads only X, so the group's
// last linears need not run: lm_head's logits (tokens x vocab floats) and
// packed weight were most of a small model's calibration memory and time.
// A linear whose input no node computes (a graph input or a cached value,
// fed to the run), or a weight that is no linear's, gets the outputs of the
// nodes reading it as before. The capture is then given `linears`
// (CaptureRequest::layers): the slice lacks some of them.
std::vector<std::string> CaptureTargets(const ir::Graph& graph,
                                        const std::vector<calibration::LinearLayer>& linears,
                                        const std::vector<std::string>& weights);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_LAYER_CUT_H_
