// Node naming: passes, the verifier and error messages need one name per
// node, while exporters often leave names empty (Paddle2ONNX, old tf2onnx)
// or repeat them.
#include "formats/onnx/node_names.h"

#include <unordered_set>

namespace slimpack::onnx_format {
namespace {

// `base` itself if free (and allowed), else the first free "<base>_<k>".
std::string FirstFreeName(const std::string& base, bool allow_bare,
                          const std::unordered_set<std::string>& original,
                          const std::unordered_set<std::string>& used) {
  if (allow_bare && !original.count(base) && !used.count(base)) return base;
  for (uint64_t k = 1;; ++k) {
    std::string candidate = base + "_" + std::to_string(k);
    if (!original.count(candidate) && !used.count(candidate)) return candidate;
  }
}

}  // namespace

std::vector<std::string> AssignUniqueNodeNames(
    const onnx::GraphProto& graph, std::vector<std::string>* warnings) {
  // Every name some node carries is reserved, so a generated name cannot
  // steal the name of a node that comes later.
  std::unordered_set<std::string> original;
  for (const auto& node : graph.node()) {
    if (!node.name().empty()) original.insert(node.name());
  }
  std::unordered_set<std::string> used;
  std::vector<std::string> names;
  names.reserve(graph.node_size());
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    std::string name;
    if (node.name().empty()) {
      std::string op = node.op_type().empty() ? "node" : node.op_type();
      name = FirstFreeName(op + "_" + std::to_string(i), /*allow_bare=*/true,
                           original, used);
    } else if (!used.count(node.name())) {
      name = node.name();
    } else {
      name = FirstFreeName(node.name(), /*allow_bare=*/false, original, used);
      if (warnings) {
        warnings->push_back("graph '" + graph.name() + "': node name '" +
                            node.name() + "' is used more than once; node " +
                            std::to_string(i) + " renamed to '" + name + "'");
      }
    }
    used.insert(name);
    names.push_back(std::move(name));
  }
  return names;
}

}  // namespace slimpack::onnx_format
