// Which candidate nodes are layers, and which reference value each one is
// compared with: by output value name, else through the candidate node's
// provenance (a fused node is compared at the output of the last of its
// source nodes the reference still has).
#ifndef SLIMPACK_REPORT_LAYER_MATCH_H_
#define SLIMPACK_REPORT_LAYER_MATCH_H_

#include <cstddef>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace slimpack::report {

struct LayerMatch {
  size_t node_index = 0;  // in candidate.nodes
  std::string output;     // candidate value
  std::string reference_output;
  std::string matched_by;  // "name" | "provenance"
  std::vector<std::string> weights;
};

struct LayerMatches {
  std::vector<LayerMatch> layers;
  std::vector<std::string> unmatched;  // candidate layer nodes with no counterpart
};

// True for a float initializer of two or more elements (or a quantized
// one): what makes a node a layer.
bool IsWeight(const ir::Tensor& t);

// True when `node`'s provenance names two or more reference nodes that read
// weights: a fusion folded their weights into the node's.
bool FoldsWeights(const ir::Node& node, const ir::Graph& reference);

// Layers are the candidate's top-level nodes that read a weight, in node
// order.
LayerMatches MatchLayers(const ir::Graph& reference, const ir::Graph& candidate);

}  // namespace slimpack::report

#endif  // SLIMPACK_REPORT_LAYER_MATCH_H_
