// fold-static-shapes (see fold_static_shapes.h).
#include "passes/fold/fold_static_shapes.h"

#include <algorithm>
#include <cstring>

#include "passes/graph_utils.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

// Dims of `value`, each nullopt when symbolic/unknown; nullopt if the rank
// is unknown.
std::optional<std::vector<std::optional<int64_t>>> KnownDims(const ir::Graph& graph,
                                                             const std::string& value) {
  std::vector<std::optional<int64_t>> dims;
  if (const ir::Tensor* t = FindConstant(graph, value)) {
    for (int64_t d : t->dims) dims.push_back(d);
    return dims;
  }
  std::optional<ir::ValueInfo> info = graph.FindValueInfo(value);
  if (!info || !info->shape.rank_known()) return std::nullopt;
  for (const ir::Dim& d : info->shape.dims()) {
    dims.push_back(d.is_static() ? std::optional<int64_t>(d.value) : std::nullopt);
  }
  return dims;
}

ir::Tensor MakeI64Tensor(std::string name, std::vector<int64_t> dims,
                         const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = ir::DType::kI64;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

// The [start, end) dims a Shape node reports (opset 15 attributes).
std::vector<std::optional<int64_t>> ShapeSlice(const ir::Node& shape,
                                               std::vector<std::optional<int64_t>> dims) {
  int64_t rank = static_cast<int64_t>(dims.size());
  int64_t start = IntAttrOr(shape, "start", 0);
  int64_t end = IntAttrOr(shape, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::max<int64_t>(0, std::min(start, rank));
  end = std::max<int64_t>(start, std::min(end, rank));
  return std::vector<std::optional<int64_t>>(dims.begin() + start, dims.begin() + end);
}

// The constant a node folds to, or why not ("-": not a candidate).
std::string Fold(const ir::Graph& graph, const ir::UseDefIndex& index,
                 const ir::Node& node, ir::Tensor& out) {
  if (!node.domain.empty() || node.inputs.empty() || node.outputs.empty()) return "-";
  const std::string& y = node.outputs[0];
  if (node.op_type == "Shape" || node.op_type == "Size") {
    auto dims = KnownDims(graph, node.inputs[0]);
    if (!dims) return "input rank unknown";
    std::vector<std::optional<int64_t>> sel =
        node.op_type == "Shape" ? ShapeSlice(node, *dims) : *dims;
    std::vector<int64_t> values;
    for (const auto& d : sel) {
      if (!d) return "input '" + node.inputs[0] + "' has symbolic dims";
      values.push_back(*d);
    }
    if (node.op_type == "Shape") {
      out = MakeI64Tensor(y, {static_cast<int64_t>(values.size())}, values);
    } else {
      int64_t n = 1;
      for (int64_t v : values) n *= v;
      out = MakeI64Tensor(y, {}, {n});
    }
    return "";
  }
  if (node.op_type != "Gather" || node.inputs.size() != 2) return "-";
  const ir::Node* shape = ProducerOf(graph, index, node.inputs[0]);
  if (shape == nullptr || !shape->domain.empty() || shape->op_type != "Shape" ||
      shape->inputs.empty()) {
    return "-";
  }
  if (IntAttrOr(node, "axis", 0) != 0) return "Gather axis is not 0";
  std::optional<std::vector<int64_t>> idx = ConstantInts(graph, node.inputs[1]);
  const ir::Tensor* idx_t = FindConstant(graph, node.inputs[1]);
  if (!idx || idx_t->dims.size() > 1) return "indices are not a constant scalar or 1-D list";
  auto dims = KnownDims(graph, shape->inputs[0]);
  if (!dims) return "rank of '" + shape->inputs[0] + "' is unknown";
  std::vector<std::optional<int64_t>> sel = ShapeSlice(*shape, *dims);
  std::vector<int64_t> values;
  for (int64_t i : *idx) {
    int64_t k = i < 0 ? i + static_cast<int64_t>(sel.size()) : i;
    if (k < 0 || k >= static_cast<int64_t>(sel.size())) return "index out of range";
    if (!sel[k]) return "selects symbolic dim " + std::to_string(i);
    values.push_back(*sel[k]);
  }
  out = MakeI64Tensor(y, idx_t->dims, values);
  return "";
}

}  // namespace

absl::Status FoldStaticShapesPass::Run(ir::Graph& graph, PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    ir::Tensor folded;
    std::string why = Fold(graph, index, node, folded);
    if (why == "-") continue;
    if (why.empty() && IsGraphOutput(graph, node.outputs[0])) {
      why = "output is a graph output";
    }
    if (!why.empty()) {
      context.Log(Describe(node) + ": not folded, " + why);
      continue;
    }
    context.stats().nodes_matched++;
    folded.provenance = node.provenance;
    graph.value_info.erase(node.outputs[0]);
    RETURN_IF_ERROR(Annotate(graph.AddInitializer(std::move(folded)),
                             "fold-static-shapes: " + Describe(node)));
    dead[n] = true;
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  if (removed > 0) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
