// fold-constants (see fold_constants.h).
#include "passes/fold/fold_constants.h"

#include <cstring>
#include <set>

#include "runtime/interpreter.h"
#include "passes/graph_utils.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

bool IsRandom(const ir::Node& node) {
  static const std::set<std::string> kRandom = {
      "RandomNormal", "RandomUniform", "RandomNormalLike",
      "RandomUniformLike", "Multinomial", "Bernoulli"};
  return node.domain.empty() && kRandom.count(node.op_type) > 0;
}

// Empty when every input of `node` is a foldable constant, else why not.
std::string WhyNotFoldable(const ir::Graph& graph, const ir::Node& node,
                           const runtime::KernelRegistry& kernels) {
  if (node.HasSubgraphs()) return "has subgraphs";
  if (IsRandom(node)) return "is random";
  if (kernels.Find(node.domain, node.op_type) == nullptr) return "has no kernel";
  for (const std::string& in : node.inputs) {
    if (in.empty()) continue;
    const ir::Tensor* t = FindConstant(graph, in);
    if (t == nullptr) return "";  // not all-constant: not a candidate at all
    if (t->dtype == ir::DType::kF16 || t->dtype == ir::DType::kBF16) {
      return "reads " + std::string(ir::DTypeName(t->dtype)) + " constant '" +
             in + "'";
    }
  }
  return "";
}

bool AllInputsConstant(const ir::Graph& graph, const ir::Node& node) {
  for (const std::string& in : node.inputs) {
    if (!in.empty() && FindConstant(graph, in) == nullptr) return false;
  }
  return true;
}

ir::Tensor ToIrTensor(const std::string& name,
                      const runtime::RtTensor& rt,
                      const ir::Provenance& provenance) {
  std::vector<uint8_t> bytes(rt.byte_size());
  if (!bytes.empty()) std::memcpy(bytes.data(), rt.raw(), bytes.size());
  ir::Tensor t;
  t.name = name;
  t.dtype = rt.dtype();
  t.dims = rt.dims();
  t.data = ir::TensorData::Owned(std::move(bytes));
  t.provenance = provenance;
  return t;
}

// Runs `node` alone on its constant inputs.
absl::StatusOr<std::vector<runtime::RtTensor>> Evaluate(
    const ir::Graph& graph, const ir::Node& node, const PassContext& context) {
  ir::Graph tiny;
  tiny.name = "fold:" + node.name;
  for (const std::string& in : node.inputs) {
    if (in.empty() || tiny.FindInitializer(in) != nullptr) continue;
    RETURN_IF_ERROR(tiny.AddInitializer(*FindConstant(graph, in)));
  }
  tiny.nodes.push_back(node);
  for (const std::string& o : node.outputs) {
    if (!o.empty()) tiny.outputs.push_back(ir::ValueInfo{o, ir::DType::kUndefined, {}});
  }
  runtime::InterpreterOptions options;
  options.opset_version = context.opset();
  options.kernels = context.kernels();
  ASSIGN_OR_RETURN(runtime::Interpreter interpreter,
                   runtime::Interpreter::Create(tiny, options));
  return interpreter.Run({});
}

}  // namespace

absl::Status FoldConstantsPass::Run(ir::Graph& graph,
                                    PassContext& context) const {
  ASSIGN_OR_RETURN(std::vector<size_t> order, graph.TopologicalOrder());
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n : order) {
    const ir::Node& node = graph.nodes[n];
    if (!AllInputsConstant(graph, node)) continue;
    std::string why = WhyNotFoldable(graph, node, *context.kernels());
    if (!why.empty()) {
      context.Log(Describe(node) + ": not folded, " + why);
      continue;
    }
    context.stats().nodes_matched++;
    absl::StatusOr<std::vector<runtime::RtTensor>> results =
        Evaluate(graph, node, context);
    if (!results.ok()) {
      return Annotate(results.status(),
                      "fold-constants: " + Describe(node) + " on constant inputs");
    }
    int64_t total = 0;
    for (const auto& r : *results) total += static_cast<int64_t>(r.byte_size());
    if (total > options_.max_output_bytes) {
      context.Log(Describe(node) + ": not folded, result is " +
                  std::to_string(total) + " bytes > max_output_bytes " +
                  std::to_string(options_.max_output_bytes));
      continue;
    }
    size_t k = 0;
    for (const std::string& o : node.outputs) {
      if (o.empty()) continue;
      RETURN_IF_ERROR(graph.AddInitializer(ToIrTensor(o, (*results)[k++], node.provenance)));
      graph.value_info.erase(o);
    }
    dead[n] = true;
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  context.stats().nodes_rewritten += removed;
  if (removed > 0) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
