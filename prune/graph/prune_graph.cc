// Channel dependency analysis (see prune_graph.h): one walk in topological
// order, spaces joined by union-find, reasons collected per space. This file
// holds the walk (space bookkeeping, shape facts, op dispatch, the result);
// the per-op rules are in prune_graph_ops.cc, sharing Analyzer through
// prune_graph_internal.h.
#include "prune/graph/prune_graph.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prune/graph/prune_graph_internal.h"
#include "support/status_macros.h"

namespace slimpack::prune {

bool ChannelMember::operator==(const ChannelMember& o) const {
  return tensor == o.tensor && axis == o.axis && begin == o.begin && count == o.count &&
         offset == o.offset && width == o.width && role == o.role;
}

namespace internal {
namespace {

bool IsOneOf(const std::string& s, std::initializer_list<const char*> list) {
  for (const char* l : list)
    if (s == l) return true;
  return false;
}

// Ops whose output 0 has input 0's channels, element for element.
bool IsChannelPreserving(const ir::Node& n) {
  if (n.domain == "slimpack") return IsOneOf(n.op_type, {"SiLU", "HardSwish", "Gelu"});
  if (!n.domain.empty()) return false;
  return IsOneOf(n.op_type, {"Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish",
                             "Tanh", "Elu", "Selu", "Celu", "Softplus", "Softsign", "Gelu",
                             "Erf", "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Identity",
                             "Dropout", "Mish", "ThresholdedRelu", "Sign", "Floor", "Ceil",
                             "Round"});
}
bool IsPool(const ir::Node& n) {
  return n.domain.empty() && IsOneOf(n.op_type, {"MaxPool", "AveragePool", "LpPool"});
}
bool IsGlobalPool(const ir::Node& n) {
  return n.domain.empty() &&
         IsOneOf(n.op_type, {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"});
}
bool IsBinary(const ir::Node& n) {
  return n.domain.empty() && IsOneOf(n.op_type, {"Add", "Sub", "Mul", "Div", "Sum", "Max", "Min"});
}
bool IsConv(const ir::Node& n) {
  return (n.domain.empty() && n.op_type == "Conv") ||
         (n.domain == "slimpack" && n.op_type == "FusedConv");
}
bool IsGemm(const ir::Node& n) {
  return (n.domain.empty() && n.op_type == "Gemm") ||
         (n.domain == "slimpack" && n.op_type == "FusedGemm");
}
bool IsMatMul(const ir::Node& n) {
  return (n.domain.empty() && n.op_type == "MatMul") ||
         (n.domain == "slimpack" && n.op_type == "MatMulAdd");
}

}  // namespace

std::string NodeLabel(const ir::Node& n) {
  return absl::StrCat(n.domain.empty() ? "" : n.domain + ".", n.op_type, " '", n.name, "'");
}

Analyzer::Analyzer(const ir::Graph& g) : g_(g) {
  for (const ir::Node& n : g.nodes)
    for (const std::string& in : n.inputs)
      if (!in.empty() && g.FindInitializer(in) != nullptr) ++init_readers_[in];
  for (const ir::ValueInfo& v : g.inputs) graph_inputs_.insert(v.name);
}

absl::StatusOr<ChannelGroups> Analyzer::Run() {
  ASSIGN_OR_RETURN(std::vector<size_t> order, g_.TopologicalOrder());
  for (size_t i : order) {
    current_ = i;
    Visit(g_.nodes[i]);
  }
  for (const ir::ValueInfo& o : g_.outputs) {
    auto it = values_.find(o.name);
    if (it != values_.end()) Mark(it->second, "reaches graph output '" + o.name + "'");
  }
  return Finish();
}

int Analyzer::Find(int s) {
  while (parent_[s] != s) s = parent_[s] = parent_[parent_[s]];
  return s;
}

void Analyzer::Union(int a, int b) {
  a = Find(a), b = Find(b);
  if (a != b) parent_[std::max(a, b)] = std::min(a, b);
}

int Analyzer::NewSpace(std::string name, int64_t channels) {
  spaces_.push_back({std::move(name), channels, {}, {}});
  parent_.push_back(static_cast<int>(parent_.size()));
  return static_cast<int>(spaces_.size()) - 1;
}

void Analyzer::MarkSpace(int s, const std::string& reason) {
  auto& r = spaces_[s].reasons;
  if (std::find(r.begin(), r.end(), reason) == r.end()) r.push_back(reason);
}

void Analyzer::Mark(const ValueChannels& v, const std::string& reason) {
  for (const ChannelSegment& s : v.segments)
    if (s.group >= 0) MarkSpace(s.group, reason);
}

const ValueChannels* Analyzer::Tracked(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

int64_t Analyzer::Extent(const ValueChannels& v) {
  int64_t e = 0;
  for (const ChannelSegment& s : v.segments) e += s.count * s.width;
  return e;
}

// Axis counted from the end (-1 = last), or 0 when unknown.
int Analyzer::AxisFromEnd(const ValueChannels& v) {
  if (v.axis < 0) return v.axis;
  return v.rank >= 0 ? static_cast<int>(v.axis - v.rank) : 0;
}

// Non-negative axis, or -1 when unknown.
int Analyzer::AxisFromStart(const ValueChannels& v) {
  if (v.axis >= 0) return v.axis;
  return v.rank >= 0 ? static_cast<int>(v.rank + v.axis) : -1;
}

// Adds one member per tracked segment of `v`: the channel axis of `v`
// maps onto `axis` of `tensor`, `scale` indices per index of `v`.
void Analyzer::AddMembers(const ValueChannels& v, const std::string& tensor, int axis, Role role,
                          int64_t scale) {
  int64_t offset = 0;
  for (const ChannelSegment& s : v.segments) {
    if (s.group >= 0) {
      spaces_[s.group].members.push_back(
          {tensor, axis, s.begin, s.count, offset * scale, s.width * scale, role});
    }
    offset += s.count * s.width;
  }
}

void Analyzer::AddSpaceMember(int space, const std::string& tensor, int axis, Role role) {
  spaces_[space].members.push_back({tensor, axis, 0, spaces_[space].channels, 0, 1, role});
}

// Shape facts from the graph's value_info: rank, spatial size, and a
// check that the channel extent agrees.
void Analyzer::FillFromShape(const std::string& name, ValueChannels& v) {
  std::optional<ir::ValueInfo> vi = g_.FindValueInfo(name);
  if (!vi || !vi->shape.rank_known()) return;
  const int64_t r = static_cast<int64_t>(vi->shape.rank());
  if (v.rank < 0) v.rank = r;
  const int a = AxisFromStart(v);
  if (a < 0 || a >= r) return;
  const ir::Dim& d = vi->shape.dim(a);
  if (d.is_static() && d.value != Extent(v)) {
    Mark(v, absl::StrCat("value '", name, "' has ", d.value, " channels in its shape, ",
                         Extent(v), " traced"));
  }
  if (v.spatial < 0) {
    int64_t s = 1;
    for (int64_t i = a + 1; i < r; ++i) {
      if (!vi->shape.dim(i).is_static()) return;
      s *= vi->shape.dim(i).value;
    }
    v.spatial = s;
  }
}

std::optional<int64_t> Analyzer::StaticDim(const std::string& name, int axis_from_end) {
  std::optional<ir::ValueInfo> vi = g_.FindValueInfo(name);
  if (!vi || !vi->shape.rank_known()) return std::nullopt;
  const int64_t i = static_cast<int64_t>(vi->shape.rank()) + axis_from_end;
  if (i < 0 || !vi->shape.dim(i).is_static()) return std::nullopt;
  return vi->shape.dim(i).value;
}

void Analyzer::Set(const std::string& name, ValueChannels v) {
  if (name.empty()) return;
  FillFromShape(name, v);
  values_[name] = std::move(v);
}

void Analyzer::MarkExtraOutputs(const ir::Node& n, const ValueChannels& v) {
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    if (!n.outputs[i].empty()) {
      Mark(v, absl::StrCat(NodeLabel(n), " output ", i, " '", n.outputs[i],
                           "' is not followed"));
    }
  }
}

// The weight of a weight node, or a reason why it cannot be used.
const ir::Tensor* Analyzer::Weight(const ir::Node& n, size_t index, size_t rank_min,
                                   size_t rank_max, std::string* why) {
  const std::string& name = index < n.inputs.size() ? n.inputs[index] : std::string();
  const ir::Tensor* t = name.empty() ? nullptr : g_.FindInitializer(name);
  if (t == nullptr) {
    *why = absl::StrCat(NodeLabel(n), " input ", index, " '", name, "' is not a constant");
    return nullptr;
  }
  if (t->dims.size() < rank_min || t->dims.size() > rank_max) {
    *why = absl::StrCat(NodeLabel(n), " weight '", name, "' has rank ", t->dims.size());
    return nullptr;
  }
  return t;
}

// A bias / per-channel vector input: its last axis is sliced when it
// spans the channels; a scalar-like vector (numel 1) is left alone.
void Analyzer::AddBias(const ir::Node& n, size_t index, int space, int64_t channels) {
  if (index >= n.inputs.size() || n.inputs[index].empty()) return;
  const ir::Tensor* b = g_.FindInitializer(n.inputs[index]);
  if (b == nullptr) {
    MarkSpace(space, absl::StrCat(NodeLabel(n), " bias '", n.inputs[index],
                                  "' is not a constant"));
    return;
  }
  auto numel = b->NumElements();
  if (numel.ok() && *numel == 1) return;
  if (b->dims.empty() || b->dims.back() != channels) {
    MarkSpace(space, absl::StrCat(NodeLabel(n), " bias '", b->name, "' does not span the ",
                                  channels, " output channels"));
    return;
  }
  AddSpaceMember(space, b->name, static_cast<int>(b->dims.size()) - 1, Role::kVector);
}

void Analyzer::Visit(const ir::Node& n) {
  std::vector<std::string> refs;
  for (const std::string& in : n.inputs)
    if (!in.empty() && Tracked(in) != nullptr) refs.push_back(in);
  if (n.HasSubgraphs()) {
    for (const auto& [name, attr] : n.attributes) {
      std::vector<std::shared_ptr<ir::Graph>> gs = attr.graphs;
      if (attr.g) gs.push_back(attr.g);
      for (const auto& sg : gs)
        for (const std::string& r : sg->OuterScopeReferences())
          if (Tracked(r) != nullptr) refs.push_back(r);
    }
  }
  if (IsConv(n)) return VisitConv(n);
  if (IsGemm(n)) return VisitGemm(n);
  if (IsMatMul(n)) return VisitMatMul(n);
  if (refs.empty()) return;
  const ValueChannels* x0 = n.inputs.empty() ? nullptr : Tracked(n.inputs[0]);
  if (!n.HasSubgraphs() && x0 != nullptr) {
    if (IsChannelPreserving(n) || IsPool(n) || IsGlobalPool(n)) {
      bool extra = false;
      for (size_t i = 1; i < n.inputs.size(); ++i) extra |= Tracked(n.inputs[i]) != nullptr;
      if (!extra && ((!IsPool(n) && !IsGlobalPool(n)) || AxisFromStart(*x0) == 1)) {
        ValueChannels y = *x0;
        if (IsPool(n)) y.spatial = -1;
        if (IsGlobalPool(n)) y.spatial = 1;
        MarkExtraOutputs(n, y);
        Set(n.outputs[0], std::move(y));
        return;
      }
    }
    if (n.domain.empty() && n.op_type == "BatchNormalization") return VisitBatchNorm(n, *x0);
    if (n.domain.empty() && n.op_type == "Flatten") return VisitFlatten(n, *x0);
    bool extra = false;
    for (size_t i = 1; i < n.inputs.size(); ++i) extra |= Tracked(n.inputs[i]) != nullptr;
    if (n.domain.empty() && n.op_type == "Split" && !extra) return VisitSplit(n, *x0);
  }
  if (!n.HasSubgraphs() && IsBinary(n)) return VisitBinary(n);
  if (!n.HasSubgraphs() && n.domain.empty() && n.op_type == "Concat") return VisitConcat(n);
  for (const std::string& r : refs) {
    Mark(values_.at(r), absl::StrCat("reaches ", NodeLabel(n), " through '", r,
                                     "', which is not followed"));
  }
}

absl::StatusOr<ChannelGroups> Analyzer::Finish() {
  // Member tensors must be plain float constants read by one node only.
  for (size_t s = 0; s < spaces_.size(); ++s) {
    for (const ChannelMember& m : spaces_[s].members) {
      const ir::Tensor* t = g_.FindInitializer(m.tensor);
      if (init_readers_[m.tensor] > 1) {
        MarkSpace(s, absl::StrCat("tensor '", m.tensor, "' is read by ",
                                  init_readers_[m.tensor], " nodes"));
      }
      if (graph_inputs_.count(m.tensor)) {
        MarkSpace(s, absl::StrCat("tensor '", m.tensor, "' is also a graph input"));
      }
      if (t->quant.quantized() ||
          (t->dtype != ir::DType::kF32 && t->dtype != ir::DType::kF16 &&
           t->dtype != ir::DType::kBF16)) {
        MarkSpace(s, absl::StrCat("tensor '", m.tensor, "' is not a float tensor"));
      }
    }
  }
  ChannelGroups out;
  std::map<int, int> group_of_root;
  for (size_t s = 0; s < spaces_.size(); ++s) {
    const int root = Find(static_cast<int>(s));
    auto [it, fresh] = group_of_root.emplace(root, static_cast<int>(out.groups.size()));
    if (fresh) out.groups.push_back({"", spaces_[root].channels, {}, {}});
    ChannelGroup& grp = out.groups[it->second];
    grp.name += (grp.name.empty() ? "" : "+") + spaces_[s].name;
    grp.members.insert(grp.members.end(), spaces_[s].members.begin(), spaces_[s].members.end());
    for (const std::string& r : spaces_[s].reasons)
      if (std::find(grp.unprunable.begin(), grp.unprunable.end(), r) == grp.unprunable.end())
        grp.unprunable.push_back(r);
  }
  for (auto& [name, v] : values_) {
    for (ChannelSegment& s : v.segments)
      if (s.group >= 0) s.group = group_of_root.at(Find(s.group));
  }
  out.values = std::move(values_);
  out.attributes = std::move(attributes_);
  out.splits = std::move(splits_);
  out.weight_nodes = std::move(weight_nodes_);
  return out;
}

}  // namespace internal

namespace {

using Role = ChannelMember::Role;
using internal::Analyzer;

const char* RoleName(Role r) {
  switch (r) {
    case Role::kOutput: return "output";
    case Role::kInput: return "input";
    case Role::kVector: return "vector";
  }
  return "?";
}

}  // namespace

absl::StatusOr<ChannelGroups> BuildChannelGroups(const ir::Graph& graph) {
  return Analyzer(graph).Run();
}

std::string FormatChannelGroups(const ChannelGroups& groups) {
  std::ostringstream os;
  for (const ChannelGroup& g : groups.groups) {
    os << "group " << g.name << " (" << g.channels << " channels): "
       << (g.prunable() ? "prunable" : "unprunable: " + absl::StrJoin(g.unprunable, "; "))
       << "\n";
    for (const ChannelMember& m : g.members) {
      os << "  " << m.tensor << " axis " << m.axis << " [" << m.begin << "," << m.begin + m.count
         << ") offset " << m.offset << " width " << m.width << " " << RoleName(m.role) << "\n";
    }
  }
  return os.str();
}

}  // namespace slimpack::prune
