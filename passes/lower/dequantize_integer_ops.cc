// dequantize-integer-ops (see dequantize_integer_ops.h).
#include "passes/lower/dequantize_integer_ops.h"

#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

bool IsOp(const ir::Node& n, std::string_view op) {
  return (n.domain.empty() || n.domain == "ai.onnx") && n.op_type == op;
}

// One matched ORT dynamic-quantization chain around an integer node.
struct Match {
  size_t integer = 0, cast = 0, scale_mul = 0, out_mul = 0;
  std::string x;  // DynamicQuantizeLinear's float input
  const ir::Tensor* wq = nullptr;
  const ir::Tensor* wzp = nullptr;  // null: zero
  const ir::Tensor* ws = nullptr;
};

// The only node reading `value` (index), or nullopt with the reason.
std::optional<size_t> OnlyReader(const ir::Graph& graph, const ir::UseDefIndex& index,
                                 const std::string& value, std::string* why) {
  auto it = index.consumers.find(value);
  if (IsGraphOutput(graph, value) || it == index.consumers.end() || it->second.size() != 1) {
    *why = "'" + value + "' has other readers than the pattern";
    return std::nullopt;
  }
  return it->second[0];
}

// Checks the chain rooted at the integer node `i`; empty string on a match.
std::string MatchChain(const ir::Graph& graph, const ir::UseDefIndex& index, size_t i,
                       Match* m) {
  const ir::Node& op = graph.nodes[i];
  const bool conv = op.op_type == "ConvInteger";
  m->integer = i;
  if (op.inputs.size() < 3 || op.inputs[2].empty()) return "has no input zero point";
  std::optional<size_t> dql = ProducerIndex(index, op.inputs[0]);
  if (!dql || !IsOp(graph.nodes[*dql], "DynamicQuantizeLinear") ||
      graph.nodes[*dql].outputs.size() < 3 || graph.nodes[*dql].outputs[0] != op.inputs[0] ||
      graph.nodes[*dql].outputs[2] != op.inputs[2]) {
    return "input is not quantized by a DynamicQuantizeLinear (with its zero point)";
  }
  const ir::Node& q = graph.nodes[*dql];
  m->x = q.inputs.empty() ? "" : q.inputs[0];
  m->wq = FindConstant(graph, op.inputs[1]);
  if (m->wq == nullptr || (m->wq->dtype != ir::DType::kU8 && m->wq->dtype != ir::DType::kI8) ||
      m->wq->quant.quantized()) {
    return "weight '" + op.inputs[1] + "' is not a u8/i8 constant";
  }
  const size_t rank = m->wq->dims.size();
  if (conv ? rank < 3 : rank != 2) {
    return absl::StrCat("weight '", op.inputs[1], "' has rank ", rank,
                        conv ? " (ConvInteger needs >= 3)" : " (MatMulInteger: only 2-D)");
  }
  const int64_t channels = conv ? m->wq->dims[0] : m->wq->dims[1];
  if (op.inputs.size() > 3 && !op.inputs[3].empty()) {
    m->wzp = FindConstant(graph, op.inputs[3]);
    if (m->wzp == nullptr || m->wzp->dtype != m->wq->dtype) {
      return "weight zero point '" + op.inputs[3] + "' is not a constant of the weight's dtype";
    }
    const uint64_t n = m->wzp->data.size();
    if (n != 1 && n != static_cast<uint64_t>(channels)) {
      return absl::StrCat("weight zero point '", op.inputs[3], "' has ", n,
                          " elements (1 or ", channels, " expected)");
    }
  }
  std::string why;
  std::optional<size_t> cast = OnlyReader(graph, index, op.outputs[0], &why);
  if (!cast) return why;
  if (!IsOp(graph.nodes[*cast], "Cast") || graph.nodes[*cast].IntAttrOr("to", 0) != 1) {
    return "result is not Cast to float";
  }
  m->cast = *cast;
  std::optional<size_t> out = OnlyReader(graph, index, graph.nodes[*cast].outputs[0], &why);
  if (!out) return why;
  const ir::Node& mul = graph.nodes[*out];
  if (!IsOp(mul, "Mul") || mul.inputs.size() != 2) return "float result is not scaled by a Mul";
  m->out_mul = *out;
  const std::string& s =
      mul.inputs[0] == graph.nodes[*cast].outputs[0] ? mul.inputs[1] : mul.inputs[0];
  std::optional<size_t> smul = ProducerIndex(index, s);
  if (!smul || !IsOp(graph.nodes[*smul], "Mul") || graph.nodes[*smul].inputs.size() != 2) {
    return "scale '" + s + "' is not Mul(activation scale, weight scale)";
  }
  const ir::Node& sm = graph.nodes[*smul];
  const int xs_side = sm.inputs[0] == q.outputs[1] ? 0 : sm.inputs[1] == q.outputs[1] ? 1 : -1;
  if (xs_side < 0) return "scale '" + s + "' does not use the DynamicQuantizeLinear's scale";
  m->ws = FindConstant(graph, sm.inputs[1 - xs_side]);
  if (m->ws == nullptr || m->ws->dtype != ir::DType::kF32) {
    return "weight scale '" + sm.inputs[1 - xs_side] + "' is not an f32 constant";
  }
  const uint64_t ns = m->ws->data.size() / 4;
  if (ns != 1 && (conv || ns != static_cast<uint64_t>(channels))) {
    return absl::StrCat("weight scale '", sm.inputs[1 - xs_side], "' has ", ns, " elements (1",
                        conv ? "" : absl::StrCat(" or ", channels), " expected)");
  }
  if (!HasSingleUse(graph, index, s)) return "scale '" + s + "' has other readers";
  m->scale_mul = *smul;
  return "";
}

int32_t IntAt(const ir::Tensor& t, uint64_t i) {
  return t.dtype == ir::DType::kU8 ? static_cast<int32_t>(t.data.data()[i])
                                   : static_cast<int32_t>(static_cast<int8_t>(t.data.data()[i]));
}

float FloatAt(const ir::Tensor& t, uint64_t i) {
  float f;
  std::memcpy(&f, t.data.data() + 4 * i, 4);
  return f;
}

// (Wq - wzp) * ws as DequantizeLinear computes it, channel = output channel.
ir::Tensor Dequantized(const Match& m, bool conv, std::string name) {
  const ir::Tensor& q = *m.wq;
  const uint64_t n = q.data.size();
  const uint64_t cols = static_cast<uint64_t>(q.dims[1]);
  const uint64_t per_out = conv ? n / static_cast<uint64_t>(q.dims[0]) : 0;
  std::vector<float> values(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t c = conv ? i / per_out : i % cols;
    const int32_t zp = m.wzp == nullptr ? 0 : IntAt(*m.wzp, m.wzp->data.size() == 1 ? 0 : c);
    const float s = FloatAt(*m.ws, m.ws->data.size() == 4 ? 0 : c);
    values[i] = static_cast<float>(IntAt(q, i) - zp) * s;
  }
  ir::Tensor t = MakeF32Tensor(std::move(name), q.dims, values);
  t.provenance = q.provenance;
  return t;
}

std::string WeightName(const ir::Graph& graph, const std::string& quantized) {
  if (absl::EndsWith(quantized, "_quantized")) {
    const std::string base = quantized.substr(0, quantized.size() - 10);
    if (UniqueValueName(graph, base) == base) return base;
  }
  return UniqueValueName(graph, quantized + "_dequantized");
}

bool IsRead(const ir::Graph& graph, const std::string& name) {
  if (IsGraphOutput(graph, name)) return true;
  for (const ir::Node& n : graph.nodes) {
    for (const std::string& in : n.inputs) {
      if (in == name) return true;
    }
  }
  for (const std::string& r : graph.OuterScopeReferences()) {
    if (r == name) return true;
  }
  for (const ir::Node& n : graph.nodes) {
    for (const auto& [attr, a] : n.attributes) {
      std::vector<const ir::Graph*> subs;
      if (a.kind == ir::Attribute::Kind::kGraph && a.g) subs.push_back(a.g.get());
      for (const auto& g : a.graphs) subs.push_back(g.get());
      for (const ir::Graph* g : subs) {
        for (const std::string& r : g->OuterScopeReferences()) {
          if (r == name) return true;
        }
      }
    }
  }
  return false;
}

}  // namespace

absl::Status DequantizeIntegerOpsPass::Run(ir::Graph& graph, PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  std::map<std::string, std::string> weights;  // Wq|wzp|ws -> dequantized name
  std::set<std::string> maybe_unused;
  std::vector<Match> matches;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& op = graph.nodes[i];
    if (!IsOp(op, "MatMulInteger") && !IsOp(op, "ConvInteger")) continue;
    Match m;
    const std::string why = MatchChain(graph, index, i, &m);
    if (!why.empty()) {
      context.Log(Describe(op) + ": kept integer, " + why);
      continue;
    }
    matches.push_back(m);
  }
  if (matches.empty()) return absl::OkStatus();
  // Every new weight is built before the first AddInitializer: the matches
  // point into the initializer list, which adding may move.
  std::vector<std::string> weight_of(matches.size());
  std::vector<ir::Tensor> new_weights;
  std::set<std::string> taken;
  for (size_t k = 0; k < matches.size(); ++k) {
    const Match& m = matches[k];
    const std::string key = absl::StrCat(m.wq->name, "|", m.wzp ? m.wzp->name : "", "|",
                                         m.ws->name);
    auto [it, fresh] = weights.emplace(key, "");
    if (fresh) {
      std::string name = WeightName(graph, m.wq->name);
      for (int j = 1; taken.count(name); ++j) name = absl::StrCat(m.wq->name, "_dequantized_", j);
      taken.insert(name);
      it->second = name;
      new_weights.push_back(
          Dequantized(m, graph.nodes[m.integer].op_type == "ConvInteger", name));
      maybe_unused.insert(m.wq->name);
      if (m.wzp) maybe_unused.insert(m.wzp->name);
      maybe_unused.insert(m.ws->name);
    }
    weight_of[k] = it->second;
  }
  for (ir::Tensor& w : new_weights) {
    if (absl::Status s = graph.AddInitializer(std::move(w)); !s.ok()) return s;
  }
  for (size_t k = 0; k < matches.size(); ++k) {
    const Match& m = matches[k];
    const ir::Node& op = graph.nodes[m.integer];
    const bool conv = op.op_type == "ConvInteger";
    ir::Node f;
    f.name = op.name;
    f.op_type = conv ? "Conv" : "MatMul";
    f.inputs = {m.x, weight_of[k]};
    f.outputs = {graph.nodes[m.out_mul].outputs[0]};
    if (conv) f.attributes = op.attributes;
    f.provenance = ir::Provenance::Merge(
        ir::Provenance::Merge(op.provenance, graph.nodes[m.cast].provenance),
        ir::Provenance::Merge(graph.nodes[m.scale_mul].provenance,
                              graph.nodes[m.out_mul].provenance));
    for (size_t d : {m.cast, m.scale_mul}) {
      graph.value_info.erase(graph.nodes[d].outputs[0]);
      dead[d] = true;
    }
    graph.value_info.erase(op.outputs[0]);
    dead[m.integer] = true;
    graph.nodes[m.out_mul] = std::move(f);
    context.stats().nodes_matched++;
    context.stats().nodes_rewritten++;
  }
  int64_t removed = EraseNodes(graph, dead);
  // A DynamicQuantizeLinear nothing reads any more goes too.
  std::vector<bool> unused(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& n = graph.nodes[i];
    if (!IsOp(n, "DynamicQuantizeLinear")) continue;
    bool read = false;
    for (const std::string& o : n.outputs) read = read || (!o.empty() && IsRead(graph, o));
    if (read) continue;
    for (const std::string& o : n.outputs) graph.value_info.erase(o);
    unused[i] = true;
  }
  removed += EraseNodes(graph, unused);
  for (const std::string& name : maybe_unused) {
    const ir::Tensor* t = graph.FindInitializer(name);
    if (t == nullptr || IsRead(graph, name)) continue;
    context.stats().bytes_saved += static_cast<int64_t>(t->data.size());
    graph.RemoveInitializer(name);
  }
  context.stats().nodes_removed += removed;
  context.MarkChanged();
  return absl::OkStatus();
}

std::vector<std::string> IntegerComputeNodes(const ir::Graph& graph) {
  std::vector<std::string> out;
  for (const ir::Node& n : graph.nodes) {
    for (const char* op : {"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv",
                           "DynamicQuantizeLinear"}) {
      if (IsOp(n, op)) out.push_back("'" + n.name + "' (" + n.op_type + ")");
    }
  }
  return out;
}

}  // namespace slimpack::passes
