// The quantized-lookup plan rewrite (see quantized_lookup.h).
#include "runtime/quantized_lookup.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/interpreter.h"
#include "runtime/kernels/fused_kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime {
namespace {

std::string Domain(const ir::Node& n) { return n.domain == "ai.onnx" ? "" : n.domain; }

// Ops whose every output element is a function of the same input element
// alone, given constant parameters (attributes, or inputs that are
// constants: Clip's bounds).
bool IsElementwise(const ir::Node& n) {
  static const std::set<std::pair<std::string, std::string>> kOps = {
      {"", "Abs"},       {"", "Clip"},      {"", "Elu"},          {"", "Erf"},
      {"", "Gelu"},      {"", "HardSigmoid"}, {"", "HardSwish"},  {"", "Identity"},
      {"", "LeakyRelu"}, {"", "Neg"},       {"", "Relu"},         {"", "Selu"},
      {"", "Sigmoid"},   {"", "Softplus"},  {"", "Tanh"},         {kSlimpackDomain, "Gelu"},
      {kSlimpackDomain, "HardSwish"},       {kSlimpackDomain, "SiLU"}};
  return kOps.count({Domain(n), n.op_type}) > 0 && n.outputs.size() == 1 && !n.inputs.empty();
}

bool IsByteType(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }

class Fuser {
 public:
  Fuser(ir::Graph& g, std::shared_ptr<const KernelRegistry> kernels, int64_t opset)
      : g_(g), kernels_(std::move(kernels)), opset_(opset) {
    for (const ir::ValueInfo& in : g_.inputs) graph_inputs_.insert(in.name);
    for (const ir::ValueInfo& out : g_.outputs) graph_outputs_.insert(out.name);
  }

  absl::StatusOr<int64_t> Run() {
    const ir::UseDefIndex index = g_.BuildUseDefIndex();
    std::set<size_t> removed;
    std::map<size_t, ir::Node> replaced;  // Q node index -> lookup node
    for (size_t qi = 0; qi < g_.nodes.size(); ++qi) {
      const ir::Node& q = g_.nodes[qi];
      if (Domain(q) != "" || q.op_type != "QuantizeLinear" || q.inputs.empty()) continue;
      const std::optional<size_t> oi = SoleProducerFeeding(index, q.inputs[0], qi);
      if (!oi || !IsElementwise(g_.nodes[*oi])) continue;
      const ir::Node& op = g_.nodes[*oi];
      const std::optional<size_t> di = SoleProducerFeeding(index, op.inputs[0], *oi);
      if (!di) continue;
      const ir::Node& dq = g_.nodes[*di];
      if (Domain(dq) != "" || dq.op_type != "DequantizeLinear") continue;
      std::optional<ir::DType> in_type = ChainIsFusable(dq, op, q);
      if (!in_type) continue;
      ASSIGN_OR_RETURN(std::optional<ir::Tensor> table, Table(dq, op, q, *in_type));
      if (!table) continue;
      ir::Node lookup;
      lookup.name = op.name.empty() ? q.name : op.name;
      lookup.op_type = kQuantizedLookupOp;
      lookup.domain = kSlimpackDomain;
      lookup.inputs = {dq.inputs[0], table->name};
      lookup.outputs = {q.outputs[0]};
      RETURN_IF_ERROR(g_.AddInitializer(*std::move(table)));
      removed.insert(*oi);
      removed.insert(*di);
      replaced.emplace(qi, std::move(lookup));
    }
    if (replaced.empty()) return 0;
    std::vector<ir::Node> nodes;
    nodes.reserve(g_.nodes.size() - 2 * replaced.size());
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (removed.count(i)) continue;
      auto it = replaced.find(i);
      nodes.push_back(it == replaced.end() ? std::move(g_.nodes[i]) : std::move(it->second));
    }
    g_.nodes = std::move(nodes);
    return static_cast<int64_t>(replaced.size());
  }

 private:
  // The node producing `value` when `value` is no graph output and node
  // `reader` is its only reader, reading it as its first input only.
  std::optional<size_t> SoleProducerFeeding(const ir::UseDefIndex& index,
                                            const std::string& value, size_t reader) const {
    if (graph_outputs_.count(value) || graph_inputs_.count(value)) return std::nullopt;
    auto p = index.producer.find(value);
    auto c = index.consumers.find(value);
    if (p == index.producer.end() || c == index.consumers.end()) return std::nullopt;
    if (c->second.size() != 1 || c->second[0] != reader) return std::nullopt;
    const ir::Node& r = g_.nodes[reader];
    for (size_t i = 1; i < r.inputs.size(); ++i) {
      if (r.inputs[i] == value) return std::nullopt;
    }
    const ir::Node& producer = g_.nodes[p->second];
    if (producer.outputs.size() != 1) return std::nullopt;
    return p->second;
  }

  // An initializer the caller cannot override with a graph input.
  const ir::Tensor* Constant(const std::string& name) const {
    if (name.empty() || graph_inputs_.count(name)) return nullptr;
    const ir::Tensor* t = g_.FindInitializer(name);
    if (t == nullptr || t->data.deferred()) return nullptr;
    return t;
  }

  bool IsScalar(const std::string& name) const {
    const ir::Tensor* t = Constant(name);
    if (t == nullptr) return false;
    auto n = t->NumElements();
    return n.ok() && *n == 1;
  }

  // The byte type of the chain's input when the chain is a function of that
  // byte: per-tensor constant scales and zero points (DequantizeLinear's
  // zero point present, which fixes its input's type), constant op
  // parameters, no blocked or retyping attributes.
  std::optional<ir::DType> ChainIsFusable(const ir::Node& dq, const ir::Node& op,
                                          const ir::Node& q) const {
    if (dq.inputs.size() != 3 || !IsScalar(dq.inputs[1]) || !IsScalar(dq.inputs[2])) {
      return std::nullopt;
    }
    const ir::DType in_type = Constant(dq.inputs[2])->dtype;
    if (!IsByteType(in_type)) return std::nullopt;
    if (q.inputs.size() < 2 || q.inputs.size() > 3 || !IsScalar(q.inputs[1])) return std::nullopt;
    if (q.inputs.size() == 3 && (!IsScalar(q.inputs[2]) ||
                                 !IsByteType(Constant(q.inputs[2])->dtype))) {
      return std::nullopt;
    }
    for (const ir::Node* n : {&dq, &q}) {
      if (n->FindAttribute("block_size") != nullptr || n->FindAttribute("output_dtype") != nullptr) {
        return std::nullopt;
      }
    }
    for (size_t i = 1; i < op.inputs.size(); ++i) {
      if (!op.inputs[i].empty() && Constant(op.inputs[i]) == nullptr) return std::nullopt;
    }
    for (const auto& [name, attr] : op.attributes) {
      if (!attr.graphs.empty()) return std::nullopt;
    }
    return in_type;
  }

  // The three nodes run by the interpreter on all 256 codes, as a [256]
  // table of the QuantizeLinear's output type indexed by the code's byte;
  // nullopt when a kernel refuses them.
  absl::StatusOr<std::optional<ir::Tensor>> Table(const ir::Node& dq, const ir::Node& op,
                                                  const ir::Node& q, ir::DType in_type) {
    ir::Graph mini;
    mini.name = "quantized_lookup";
    mini.inputs.push_back(ir::ValueInfo{dq.inputs[0], in_type, {}});
    mini.outputs.push_back(ir::ValueInfo{q.outputs[0], ir::DType::kUndefined, {}});
    std::set<std::string> copied;
    for (const ir::Node* n : {&dq, &op, &q}) {
      for (size_t i = 1; i < n->inputs.size(); ++i) {
        const std::string& name = n->inputs[i];
        if (name.empty() || !copied.insert(name).second) continue;
        RETURN_IF_ERROR(mini.AddInitializer(*Constant(name)));
      }
      mini.nodes.push_back(*n);
    }
    InterpreterOptions options;
    options.opset_version = opset_;
    options.kernels = kernels_;
    options.fuse_quantized_lookups = false;
    auto interp = Interpreter::Create(mini, options);
    if (!interp.ok()) return std::nullopt;
    std::vector<uint8_t> codes(256);
    for (int c = 0; c < 256; ++c) codes[static_cast<size_t>(c)] = static_cast<uint8_t>(c);
    RtTensor x = in_type == ir::DType::kU8
                     ? RtTensor::FromVector<uint8_t>({256}, codes)
                     : RtTensor::FromVector<int8_t>(
                           {256}, std::vector<int8_t>(codes.begin(), codes.end()));
    auto out = interp->Run({{dq.inputs[0], std::move(x)}});
    if (!out.ok() || out->size() != 1) return std::nullopt;
    const RtTensor& y = (*out)[0];
    if (!IsByteType(y.dtype()) || y.num_elements() != 256) return std::nullopt;
    ir::Tensor table;
    table.name = q.outputs[0] + "__lookup_table";
    while (g_.FindInitializer(table.name) != nullptr) table.name += "_";
    table.dtype = y.dtype();
    table.dims = {256};
    table.data = ir::TensorData::Owned(std::vector<uint8_t>(y.raw(), y.raw() + 256));
    return table;
  }

  ir::Graph& g_;
  std::shared_ptr<const KernelRegistry> kernels_;
  int64_t opset_;
  std::set<std::string> graph_inputs_, graph_outputs_;
};

}  // namespace

absl::StatusOr<int64_t> FuseQuantizedLookups(ir::Graph& g,
                                             std::shared_ptr<const KernelRegistry> kernels,
                                             int64_t opset_version) {
  return Fuser(g, std::move(kernels), opset_version).Run();
}

}  // namespace slimpack::runtime
