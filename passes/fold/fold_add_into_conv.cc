// fold-add-into-conv (see fold_add_into_conv.h).
#include "passes/fold/fold_add_into_conv.h"

#include <cstring>

#include "passes/graph_utils.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

// Per-channel values of `b` for a Conv with `channels` outputs of rank
// `rank`, or why it does not broadcast along channels only.
std::string ChannelValues(const ir::Tensor& b, int64_t channels, size_t rank,
                          std::vector<float>& values) {
  if (b.dtype != ir::DType::kF32) return "addend '" + b.name + "' is not f32";
  std::vector<float> v(b.data.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), b.data.data(), v.size() * sizeof(float));
  if (v.size() == 1 && b.dims.size() <= rank) {
    values.assign(static_cast<size_t>(channels), v[0]);
    return "";
  }
  // Align b's dims to the right of the output dims; the channel axis is 1.
  if (b.dims.size() != rank && b.dims.size() + 1 != rank) {
    return "addend '" + b.name + "' has rank " + std::to_string(b.dims.size());
  }
  size_t offset = rank - b.dims.size();
  for (size_t i = 0; i < b.dims.size(); ++i) {
    int64_t want = i + offset == 1 ? channels : 1;
    if (b.dims[i] != want) {
      return "addend '" + b.name + "' does not broadcast along channels only";
    }
  }
  values = std::move(v);
  return "";
}

}  // namespace

absl::Status FoldAddIntoConvPass::Run(ir::Graph& graph, PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& add = graph.nodes[n];
    if (dead[n] || !add.domain.empty() || add.op_type != "Add" || add.inputs.size() != 2) {
      continue;
    }
    size_t conv_i;
    std::string addend;
    std::optional<size_t> p;
    for (int side = 0; side < 2 && !p; ++side) {
      std::optional<size_t> q = ProducerIndex(index, add.inputs[side]);
      if (q && !dead[*q] && graph.nodes[*q].domain.empty() &&
          graph.nodes[*q].op_type == "Conv") {
        p = q;
        addend = add.inputs[1 - side];
      }
    }
    if (!p) continue;
    conv_i = *p;
    const ir::Node& conv = graph.nodes[conv_i];
    const ir::Tensor* b = FindConstant(graph, addend);
    const ir::Tensor* w = conv.inputs.size() > 1 ? FindConstant(graph, conv.inputs[1]) : nullptr;
    std::string why;
    std::vector<float> values;
    if (b == nullptr) {
      why = "addend '" + addend + "' is not a constant";
    } else if (w == nullptr || w->dims.size() < 3) {
      why = "Conv weight is not a constant of rank >= 3";
    } else if (!HasSingleUse(graph, index, conv.outputs[0])) {
      why = "output of " + Describe(conv) + " has other readers";
    } else {
      why = ChannelValues(*b, w->dims[0], w->dims.size(), values);
    }
    std::optional<std::vector<float>> old_bias;
    if (why.empty() && conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
      old_bias = ConstantFloats(graph, conv.inputs[2]);
      if (!old_bias || old_bias->size() != values.size()) {
        why = "Conv bias '" + conv.inputs[2] + "' is not an f32 constant [C]";
      }
    }
    if (!why.empty()) {
      context.Log(Describe(add) + ": not folded, " + why);
      continue;
    }
    context.stats().nodes_matched++;
    if (old_bias) {
      for (size_t c = 0; c < values.size(); ++c) values[c] += (*old_bias)[c];
    }
    std::string base = (old_bias ? conv.inputs[2] : conv.inputs[1]) + "_bias_folded";
    std::string bias_name = UniqueValueName(graph, base);
    ir::Tensor bias = MakeF32Tensor(bias_name, {static_cast<int64_t>(values.size())}, values);
    bias.provenance = ir::Provenance::Merge(b->provenance,
                                            old_bias ? FindConstant(graph, conv.inputs[2])->provenance
                                                     : ir::Provenance());
    RETURN_IF_ERROR(Annotate(graph.AddInitializer(std::move(bias)),
                             "fold-add-into-conv: " + Describe(add)));
    ir::Node& c = graph.nodes[conv_i];
    context.stats().bytes_saved += StaticByteSize(graph, c.outputs[0]);
    graph.value_info.erase(c.outputs[0]);
    c.inputs.resize(3);
    c.inputs[2] = bias_name;
    c.outputs = {graph.nodes[n].outputs[0]};
    c.provenance = ir::Provenance::Merge(c.provenance, graph.nodes[n].provenance);
    context.stats().nodes_rewritten++;
    dead[n] = true;
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  if (removed > 0) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
