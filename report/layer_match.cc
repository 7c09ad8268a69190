// Matching by name first: passes that keep a value's name keep its meaning.
// Provenance is the fallback for fusions, whose outputs get new names.
#include "report/layer_match.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/dtype.h"

namespace slimpack::report {

bool IsWeight(const ir::Tensor& t) {
  if (t.quant.quantized()) return true;
  // Plain 8-bit weights of integer ops (QLinearConv, MatMulInteger in a
  // W8A8 candidate); scalar zero points have one element and stay out.
  if (t.dtype == ir::DType::kI8 || t.dtype == ir::DType::kU8) {
    auto n = t.NumElements();
    return n.ok() && *n >= 2;
  }
  if (t.dtype != ir::DType::kF32 && t.dtype != ir::DType::kF16 && t.dtype != ir::DType::kBF16 &&
      t.dtype != ir::DType::kF64) {
    return false;
  }
  auto n = t.NumElements();
  return n.ok() && *n >= 2;
}

bool FoldsWeights(const ir::Node& node, const ir::Graph& reference) {
  const auto& src = node.provenance.source_nodes;
  if (src.size() < 2) return false;
  int weighted = 0;
  for (const ir::Node& r : reference.nodes) {
    if (std::find(src.begin(), src.end(), r.name) == src.end()) continue;
    for (const std::string& in : r.inputs) {
      const ir::Tensor* t = in.empty() ? nullptr : reference.FindInitializer(in);
      if (t != nullptr && IsWeight(*t)) {
        ++weighted;
        break;
      }
    }
  }
  return weighted >= 2;
}

LayerMatches MatchLayers(const ir::Graph& reference, const ir::Graph& candidate) {
  std::unordered_set<std::string> ref_values;
  std::unordered_map<std::string, const ir::Node*> ref_nodes;
  for (const ir::Node& n : reference.nodes) {
    ref_nodes[n.name] = &n;
    for (const std::string& o : n.outputs) {
      if (!o.empty()) ref_values.insert(o);
    }
  }
  LayerMatches out;
  for (size_t i = 0; i < candidate.nodes.size(); ++i) {
    const ir::Node& n = candidate.nodes[i];
    std::vector<std::string> weights;
    for (const std::string& in : n.inputs) {
      const ir::Tensor* t = in.empty() ? nullptr : candidate.FindInitializer(in);
      if (t != nullptr && IsWeight(*t)) weights.push_back(in);
    }
    if (weights.empty() || n.outputs.empty() || n.outputs[0].empty()) continue;
    LayerMatch m;
    m.node_index = i;
    m.output = n.outputs[0];
    m.weights = std::move(weights);
    // Static quantization names an integer value after the float value it
    // stands for ("<value>_quantized"), which is the one to compare with.
    const std::string kQuantized = "_quantized";
    const bool quantized_name =
        m.output.size() > kQuantized.size() &&
        m.output.compare(m.output.size() - kQuantized.size(), kQuantized.size(), kQuantized) == 0;
    const std::string unquantized =
        quantized_name ? m.output.substr(0, m.output.size() - kQuantized.size()) : "";
    if (ref_values.count(m.output) > 0) {
      m.reference_output = m.output;
      m.matched_by = "name";
    } else if (quantized_name && ref_values.count(unquantized) > 0) {
      m.reference_output = unquantized;
      m.matched_by = "name";
    } else {
      const auto& src = n.provenance.source_nodes;
      for (auto it = src.rbegin(); it != src.rend(); ++it) {
        auto r = ref_nodes.find(*it);
        if (r != ref_nodes.end() && !r->second->outputs.empty() && !r->second->outputs[0].empty()) {
          m.reference_output = r->second->outputs[0];
          m.matched_by = "provenance";
          break;
        }
      }
    }
    if (m.matched_by.empty()) {
      out.unmatched.push_back(n.name);
    } else {
      out.layers.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace slimpack::report
