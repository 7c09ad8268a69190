// fuse-bn-into-conv (see fuse_bn_into_conv.h for the formula).
#include "passes/fuse/fuse_bn_into_conv.h"

#include <cmath>

#include "passes/graph_utils.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

// Everything the rewrite needs, gathered before any mutation.
struct Match {
  size_t producer = 0;
  size_t bn = 0;
  int64_t channels = 0;
  std::vector<double> scale;  // s[k]
  std::vector<double> shift;  // b[k] - m[k] * s[k]
  std::vector<float> weight;
  std::vector<int64_t> weight_dims;
  std::vector<float> bias;  // per channel, already times beta for Gemm
};

// Output channel of flat weight element `i`.
int64_t ChannelOf(const ir::Node& producer, const std::vector<int64_t>& dims,
                  int64_t i, int64_t channels) {
  int64_t inner = 1;
  for (size_t d = 2; d < dims.size(); ++d) inner *= dims[d];
  if (producer.op_type == "Conv") return i / (dims[1] * inner);
  if (producer.op_type == "ConvTranspose") {
    int64_t group = IntAttrOr(producer, "group", 1);
    int64_t c_in = i / (dims[1] * inner);
    int64_t j = (i / inner) % dims[1];
    return (c_in / (dims[0] / group)) * dims[1] + j;
  }
  // Gemm: B is [M, K] with transB, else [K, M].
  bool trans_b = IntAttrOr(producer, "transB", 0) != 0;
  (void)channels;
  return trans_b ? i / dims[1] : i % dims[1];
}

// Empty on success, else the reason the pair does not fuse.
std::string MatchPair(const ir::Graph& graph, const ir::UseDefIndex& index,
                      const std::vector<bool>& dead, size_t bn_index,
                      Match& m) {
  const ir::Node& bn = graph.nodes[bn_index];
  if (bn.inputs.size() != 5) return "does not have 5 inputs";
  if (IntAttrOr(bn, "training_mode", 0) != 0) return "is in training mode";
  for (size_t i = 1; i < bn.outputs.size(); ++i) {
    if (!bn.outputs[i].empty() && UseCount(graph, index, bn.outputs[i]) > 0) {
      return "running-statistics output '" + bn.outputs[i] + "' is used";
    }
  }
  std::optional<size_t> p = ProducerIndex(index, bn.inputs[0]);
  if (!p || dead[*p]) return "input is not produced by a node";
  const ir::Node& prod = graph.nodes[*p];
  if (!prod.domain.empty() ||
      (prod.op_type != "Conv" && prod.op_type != "ConvTranspose" &&
       prod.op_type != "Gemm")) {
    return "input comes from " + Describe(prod) + ", not Conv/ConvTranspose/Gemm";
  }
  if (!HasSingleUse(graph, index, bn.inputs[0])) {
    return "output of " + Describe(prod) + " has other readers";
  }
  if (prod.inputs.size() < 2) return Describe(prod) + " has no weight";
  const ir::Tensor* w = FindConstant(graph, prod.inputs[1]);
  std::optional<std::vector<float>> wv = ConstantFloats(graph, prod.inputs[1]);
  if (w == nullptr || !wv) return "weight of " + Describe(prod) + " is not an f32 constant";
  if (w->dims.size() < 2 || (prod.op_type == "Gemm" && w->dims.size() != 2)) {
    return "weight of " + Describe(prod) + " has rank " + std::to_string(w->dims.size());
  }
  int64_t channels = 0;
  if (prod.op_type == "Conv") channels = w->dims[0];
  if (prod.op_type == "ConvTranspose") channels = w->dims[1] * IntAttrOr(prod, "group", 1);
  if (prod.op_type == "Gemm") {
    channels = IntAttrOr(prod, "transB", 0) != 0 ? w->dims[0] : w->dims[1];
  }
  std::vector<std::vector<float>> params;
  for (size_t i = 1; i < 5; ++i) {
    std::optional<std::vector<float>> v = ConstantFloats(graph, bn.inputs[i]);
    if (!v) return "parameter '" + bn.inputs[i] + "' is not an f32 constant";
    if (static_cast<int64_t>(v->size()) != channels) {
      return "parameter '" + bn.inputs[i] + "' has " + std::to_string(v->size()) +
             " values, expected " + std::to_string(channels) + " channels";
    }
    params.push_back(*std::move(v));
  }
  std::vector<float> bias(channels, 0.0f);
  double beta = prod.op_type == "Gemm" ? FloatAttrOr(prod, "beta", 1.0f) : 1.0;
  if (prod.inputs.size() > 2 && !prod.inputs[2].empty()) {
    std::optional<std::vector<float>> b = ConstantFloats(graph, prod.inputs[2]);
    if (!b) return "bias of " + Describe(prod) + " is not an f32 constant";
    if (b->size() == 1) {
      bias.assign(channels, (*b)[0]);
    } else if (static_cast<int64_t>(b->size()) == channels &&
               FindConstant(graph, prod.inputs[2])->dims.back() == channels) {
      bias = *b;
    } else {
      return "bias of " + Describe(prod) + " is not per channel";
    }
  }
  float epsilon = FloatAttrOr(bn, "epsilon", 1e-5f);
  m.producer = *p;
  m.bn = bn_index;
  m.channels = channels;
  m.weight = *std::move(wv);
  m.weight_dims = w->dims;
  m.scale.resize(channels);
  m.bias.resize(channels);
  for (int64_t k = 0; k < channels; ++k) {
    double s = params[0][k] / std::sqrt(static_cast<double>(params[3][k]) + epsilon);
    m.scale[k] = s;
    m.bias[k] = static_cast<float>((beta * bias[k] - params[2][k]) * s + params[1][k]);
  }
  return "";
}

// Replaces initializer `name` if only `reader` reads it, else adds a fresh
// one; returns the name the producer should read.
absl::StatusOr<std::string> StoreTensor(ir::Graph& graph,
                                        const ir::UseDefIndex& index,
                                        const std::string& name,
                                        const std::string& fresh_base,
                                        ir::Tensor t) {
  if (!name.empty() && HasSingleUse(graph, index, name) &&
      FindConstant(graph, name) != nullptr) {
    ir::Tensor* old = graph.FindMutableInitializer(name);
    t.name = name;
    t.provenance = old->provenance;
    *old = std::move(t);
    return name;
  }
  t.name = UniqueValueName(graph, fresh_base);
  std::string result = t.name;
  RETURN_IF_ERROR(graph.AddInitializer(std::move(t)));
  return result;
}

absl::Status Rewrite(ir::Graph& graph, const ir::UseDefIndex& index,
                     const Match& m, PassContext& context) {
  ir::Node& prod = graph.nodes[m.producer];
  const ir::Node& bn = graph.nodes[m.bn];
  std::vector<float> w(m.weight.size());
  for (size_t i = 0; i < w.size(); ++i) {
    int64_t k = ChannelOf(prod, m.weight_dims, static_cast<int64_t>(i), m.channels);
    w[i] = static_cast<float>(m.weight[i] * m.scale[k]);
  }
  std::string base = prod.name.empty() ? bn.outputs[0] : prod.name;
  ASSIGN_OR_RETURN(std::string w_name,
                   StoreTensor(graph, index, prod.inputs[1], base + "_weight",
                               MakeF32Tensor("", m.weight_dims, w)));
  std::string b_old = prod.inputs.size() > 2 ? prod.inputs[2] : "";
  ASSIGN_OR_RETURN(std::string b_name,
                   StoreTensor(graph, index, b_old, base + "_bias",
                               MakeF32Tensor("", {m.channels}, m.bias)));
  prod.inputs.resize(3);
  prod.inputs[1] = w_name;
  prod.inputs[2] = b_name;
  if (prod.op_type == "Gemm") prod.attributes["beta"] = ir::Attribute::Float(1.0f);
  context.stats().bytes_saved += StaticByteSize(graph, prod.outputs[0]);
  graph.value_info.erase(prod.outputs[0]);
  prod.outputs[0] = bn.outputs[0];
  prod.provenance = ir::Provenance::Merge(prod.provenance, bn.provenance);
  return absl::OkStatus();
}

}  // namespace

absl::Status FuseBnIntoConvPass::Run(ir::Graph& graph,
                                     PassContext& context) const {
  bool fused_any = true;
  while (fused_any) {
    fused_any = false;
    ir::UseDefIndex index = graph.BuildUseDefIndex();
    std::vector<bool> dead(graph.nodes.size(), false);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (dead[n]) continue;  // absorbed by an earlier match
      const ir::Node& node = graph.nodes[n];
      if (!node.domain.empty() || node.op_type != "BatchNormalization") continue;
      Match m;
      std::string why = MatchPair(graph, index, dead, n, m);
      if (!why.empty()) {
        context.Log(Describe(node) + ": not fused, " + why);
        continue;
      }
      context.stats().nodes_matched++;
      RETURN_IF_ERROR(Annotate(Rewrite(graph, index, m, context),
                               "fuse-bn-into-conv: " + Describe(node)));
      dead[n] = true;
      fused_any = true;
      context.stats().nodes_rewritten++;
    }
    context.stats().nodes_removed += EraseNodes(graph, dead);
    if (fused_any) context.MarkChanged();
  }
  return absl::OkStatus();
}

}  // namespace slimpack::passes
