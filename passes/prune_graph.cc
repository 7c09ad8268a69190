// Channel dependency analysis (see prune_graph.h): one walk in topological
// order, spaces joined by union-find, reasons collected per space.
#include "passes/prune_graph.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"

namespace slimpack::prune {

bool ChannelMember::operator==(const ChannelMember& o) const {
  return tensor == o.tensor && axis == o.axis && begin == o.begin && count == o.count &&
         offset == o.offset && width == o.width && role == o.role;
}

namespace {

using Role = ChannelMember::Role;

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

int64_t IntAttr(const ir::Node& n, const std::string& name, int64_t dflt) {
  const ir::Attribute* a = n.FindAttribute(name);
  return a != nullptr && a->kind == ir::Attribute::Kind::kInt ? a->i : dflt;
}

std::string NodeLabel(const ir::Node& n) {
  return absl::StrCat(n.domain.empty() ? "" : n.domain + ".", n.op_type, " '", n.name, "'");
}

struct Space {
  std::string name;
  int64_t channels = 0;
  std::vector<ChannelMember> members;
  std::vector<std::string> reasons;
};

class Analyzer {
 public:
  explicit Analyzer(const ir::Graph& g) : g_(g) {
    for (const ir::Node& n : g.nodes)
      for (const std::string& in : n.inputs)
        if (!in.empty() && g.FindInitializer(in) != nullptr) ++init_readers_[in];
    for (const ir::ValueInfo& v : g.inputs) graph_inputs_.insert(v.name);
  }

  absl::StatusOr<ChannelGroups> Run() {
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

 private:
  int Find(int s) {
    while (parent_[s] != s) s = parent_[s] = parent_[parent_[s]];
    return s;
  }
  void Union(int a, int b) {
    a = Find(a), b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }
  int NewSpace(std::string name, int64_t channels) {
    spaces_.push_back({std::move(name), channels, {}, {}});
    parent_.push_back(static_cast<int>(parent_.size()));
    return static_cast<int>(spaces_.size()) - 1;
  }
  void MarkSpace(int s, const std::string& reason) {
    auto& r = spaces_[s].reasons;
    if (std::find(r.begin(), r.end(), reason) == r.end()) r.push_back(reason);
  }
  void Mark(const ValueChannels& v, const std::string& reason) {
    for (const ChannelSegment& s : v.segments)
      if (s.group >= 0) MarkSpace(s.group, reason);
  }
  const ValueChannels* Tracked(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  static int64_t Extent(const ValueChannels& v) {
    int64_t e = 0;
    for (const ChannelSegment& s : v.segments) e += s.count * s.width;
    return e;
  }
  // Axis counted from the end (-1 = last), or 0 when unknown.
  static int AxisFromEnd(const ValueChannels& v) {
    if (v.axis < 0) return v.axis;
    return v.rank >= 0 ? static_cast<int>(v.axis - v.rank) : 0;
  }
  // Non-negative axis, or -1 when unknown.
  static int AxisFromStart(const ValueChannels& v) {
    if (v.axis >= 0) return v.axis;
    return v.rank >= 0 ? static_cast<int>(v.rank + v.axis) : -1;
  }
  // Adds one member per tracked segment of `v`: the channel axis of `v`
  // maps onto `axis` of `tensor`, `scale` indices per index of `v`.
  void AddMembers(const ValueChannels& v, const std::string& tensor, int axis, Role role,
                  int64_t scale = 1) {
    int64_t offset = 0;
    for (const ChannelSegment& s : v.segments) {
      if (s.group >= 0) {
        spaces_[s.group].members.push_back(
            {tensor, axis, s.begin, s.count, offset * scale, s.width * scale, role});
      }
      offset += s.count * s.width;
    }
  }
  void AddSpaceMember(int space, const std::string& tensor, int axis, Role role) {
    spaces_[space].members.push_back({tensor, axis, 0, spaces_[space].channels, 0, 1, role});
  }
  // Shape facts from the graph's value_info: rank, spatial size, and a
  // check that the channel extent agrees.
  void FillFromShape(const std::string& name, ValueChannels& v) {
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
  std::optional<int64_t> StaticDim(const std::string& name, int axis_from_end) {
    std::optional<ir::ValueInfo> vi = g_.FindValueInfo(name);
    if (!vi || !vi->shape.rank_known()) return std::nullopt;
    const int64_t i = static_cast<int64_t>(vi->shape.rank()) + axis_from_end;
    if (i < 0 || !vi->shape.dim(i).is_static()) return std::nullopt;
    return vi->shape.dim(i).value;
  }
  void Set(const std::string& name, ValueChannels v) {
    if (name.empty()) return;
    FillFromShape(name, v);
    values_[name] = std::move(v);
  }
  void MarkExtraOutputs(const ir::Node& n, const ValueChannels& v) {
    for (size_t i = 1; i < n.outputs.size(); ++i) {
      if (!n.outputs[i].empty()) {
        Mark(v, absl::StrCat(NodeLabel(n), " output ", i, " '", n.outputs[i],
                             "' is not followed"));
      }
    }
  }
  // The weight of a weight node, or a reason why it cannot be used.
  const ir::Tensor* Weight(const ir::Node& n, size_t index, size_t rank_min, size_t rank_max,
                           std::string* why) {
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
  void AddBias(const ir::Node& n, size_t index, int space, int64_t channels) {
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

  void VisitConv(const ir::Node& n) {
    const ValueChannels* x = Tracked(n.inputs[0]);
    std::string why;
    const ir::Tensor* w = Weight(n, 1, 3, 5, &why);
    if (w == nullptr) {
      if (x != nullptr) Mark(*x, why);
      return;
    }
    weight_nodes_[w->name] = current_;
    const int64_t group = IntAttr(n, "group", 1), cout = w->dims[0], cin_per = w->dims[1];
    if (x != nullptr) {
      const int64_t ext = Extent(*x);
      if (AxisFromStart(*x) != 1) {
        Mark(*x, absl::StrCat(NodeLabel(n), " reads channels on axis ", x->axis, ", not 1"));
      } else if (group == 1) {
        if (cin_per != ext) {
          Mark(*x, absl::StrCat(NodeLabel(n), " weight '", w->name, "' has ", cin_per,
                                " input channels, ", ext, " traced"));
        } else {
          AddMembers(*x, w->name, 1, Role::kInput);
        }
      } else if (group == ext && cin_per == 1 && cout % group == 0) {
        // Depthwise: input channel c owns output channels [c*m, (c+1)*m).
        const int64_t m = cout / group;
        ValueChannels y = *x;
        for (ChannelSegment& s : y.segments) s.width *= m;
        y.rank = static_cast<int64_t>(w->dims.size());
        y.spatial = -1;
        AddMembers(*x, w->name, 0, Role::kOutput, m);
        if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
          const ir::Tensor* b = g_.FindInitializer(n.inputs[2]);
          if (b == nullptr || b->dims.size() != 1 || b->dims[0] != cout) {
            Mark(*x, absl::StrCat(NodeLabel(n), " bias '", n.inputs[2],
                                  "' is not a constant [", cout, "] vector"));
          } else {
            AddMembers(*x, b->name, 0, Role::kVector, m);
          }
        }
        attributes_.push_back({current_, "group", n.inputs[0]});
        MarkExtraOutputs(n, y);
        Set(n.outputs[0], std::move(y));
        return;
      } else {
        Mark(*x, absl::StrCat("grouped ", NodeLabel(n), " (group=", group,
                              ", not depthwise): whole groups are not pruned"));
      }
    }
    const int space = NewSpace(n.name, cout);
    if (group != 1) {
      MarkSpace(space, absl::StrCat("grouped ", NodeLabel(n), " (group=", group,
                                    "): output channels must stay divisible by the group"));
    }
    AddSpaceMember(space, w->name, 0, Role::kOutput);
    AddBias(n, 2, space, cout);
    ValueChannels y;
    y.axis = 1;
    y.rank = static_cast<int64_t>(w->dims.size());
    y.segments = {{space, 0, cout, 1}};
    Set(n.outputs[0], std::move(y));
  }

  void VisitGemm(const ir::Node& n) {
    const ValueChannels* a = Tracked(n.inputs[0]);
    if (n.inputs.size() > 2) {
      if (const ValueChannels* c = Tracked(n.inputs[2]))
        Mark(*c, absl::StrCat(NodeLabel(n), " reads channels as C"));
    }
    std::string why;
    const ir::Tensor* b = Weight(n, 1, 2, 2, &why);
    if (b == nullptr) {
      if (a != nullptr) Mark(*a, why);
      return;
    }
    weight_nodes_[b->name] = current_;
    const bool trans_b = IntAttr(n, "transB", 0) != 0;
    const int64_t k = trans_b ? b->dims[1] : b->dims[0], out = trans_b ? b->dims[0] : b->dims[1];
    if (a != nullptr) {
      const bool axis_ok =
          (a->rank == 2 && AxisFromStart(*a) == 1) || (a->rank < 0 && a->axis == -1);
      if (IntAttr(n, "transA", 0) != 0 || !axis_ok) {
        Mark(*a, absl::StrCat(NodeLabel(n), " does not read channels as A's columns"));
      } else if (Extent(*a) != k) {
        Mark(*a, absl::StrCat(NodeLabel(n), " weight '", b->name, "' has ", k, " inputs, ",
                              Extent(*a), " traced"));
      } else {
        AddMembers(*a, b->name, trans_b ? 1 : 0, Role::kInput);
      }
    }
    const int space = NewSpace(n.name, out);
    AddSpaceMember(space, b->name, trans_b ? 0 : 1, Role::kOutput);
    AddBias(n, 2, space, out);
    ValueChannels y;
    y.axis = 1;
    y.rank = 2;
    y.spatial = 1;
    y.segments = {{space, 0, out, 1}};
    Set(n.outputs[0], std::move(y));
  }

  void VisitMatMul(const ir::Node& n) {
    const ValueChannels* a = Tracked(n.inputs[0]);
    const ValueChannels* bv = n.inputs.size() > 1 ? Tracked(n.inputs[1]) : nullptr;
    if (bv != nullptr) Mark(*bv, absl::StrCat(NodeLabel(n), " reads channels as B"));
    std::string why;
    const ir::Tensor* b = Weight(n, 1, 2, 2, &why);
    if (b == nullptr) {
      if (a != nullptr) Mark(*a, why);
      return;
    }
    weight_nodes_[b->name] = current_;
    int64_t rank = -1;
    if (a != nullptr) {
      rank = a->rank;
      if (AxisFromEnd(*a) != -1) {
        Mark(*a, absl::StrCat(NodeLabel(n), " reads channels on a non-last axis"));
      } else if (Extent(*a) != b->dims[0]) {
        Mark(*a, absl::StrCat(NodeLabel(n), " weight '", b->name, "' has ", b->dims[0],
                              " inputs, ", Extent(*a), " traced"));
      } else {
        AddMembers(*a, b->name, 0, Role::kInput);
      }
    } else if (auto vi = g_.FindValueInfo(n.inputs[0]); vi && vi->shape.rank_known()) {
      rank = static_cast<int64_t>(vi->shape.rank());
    }
    const int space = NewSpace(n.name, b->dims[1]);
    AddSpaceMember(space, b->name, 1, Role::kOutput);
    if (n.op_type == "MatMulAdd") AddBias(n, 2, space, b->dims[1]);
    ValueChannels y;
    y.axis = -1;
    y.rank = rank;
    y.spatial = 1;
    y.segments = {{space, 0, b->dims[1], 1}};
    Set(n.outputs[0], std::move(y));
  }

  void VisitBatchNorm(const ir::Node& n, const ValueChannels& x) {
    if (AxisFromStart(x) != 1) {
      Mark(x, absl::StrCat(NodeLabel(n), " normalizes axis 1, channels are on axis ", x.axis));
      return;
    }
    const int64_t ext = Extent(x);
    for (size_t i = 1; i < 5 && i < n.inputs.size(); ++i) {
      const ir::Tensor* p = g_.FindInitializer(n.inputs[i]);
      if (p == nullptr || p->dims.size() != 1 || p->dims[0] != ext) {
        Mark(x, absl::StrCat(NodeLabel(n), " input '", n.inputs[i], "' is not a constant [",
                             ext, "] vector"));
        return;
      }
    }
    for (size_t i = 1; i < 5 && i < n.inputs.size(); ++i)
      AddMembers(x, n.inputs[i], 0, Role::kVector);
    MarkExtraOutputs(n, x);
    Set(n.outputs[0], x);
  }

  // Two tracked values with the same channel layout: couples them
  // channel by channel. Returns false (and marks both) when they differ.
  bool Couple(const ir::Node& n, const ValueChannels& a, const ValueChannels& b) {
    bool same = AxisFromEnd(a) == AxisFromEnd(b) && AxisFromEnd(a) != 0 &&
                a.segments.size() == b.segments.size();
    for (size_t i = 0; same && i < a.segments.size(); ++i) {
      const ChannelSegment &s = a.segments[i], &t = b.segments[i];
      same = s.begin == t.begin && s.count == t.count && s.width == t.width &&
             (s.group < 0) == (t.group < 0) &&
             (s.group < 0 || spaces_[s.group].channels == spaces_[t.group].channels);
    }
    if (!same) {
      const std::string r = absl::StrCat(NodeLabel(n), " combines values whose channels differ");
      Mark(a, r);
      Mark(b, r);
      return false;
    }
    for (size_t i = 0; i < a.segments.size(); ++i)
      if (a.segments[i].group >= 0) Union(a.segments[i].group, b.segments[i].group);
    return true;
  }

  void VisitBinary(const ir::Node& n) {
    const ValueChannels* first = nullptr;
    std::vector<const ValueChannels*> tracked;
    for (const std::string& in : n.inputs)
      if (const ValueChannels* v = Tracked(in)) tracked.push_back(v);
    first = tracked[0];
    for (size_t i = 1; i < tracked.size(); ++i) Couple(n, *first, *tracked[i]);
    const int from_end = AxisFromEnd(*first);
    const int64_t ext = Extent(*first);
    for (const std::string& in : n.inputs) {
      if (Tracked(in) != nullptr || in.empty()) continue;
      const ir::Tensor* c = g_.FindInitializer(in);
      if (c == nullptr) {
        Mark(*first, absl::StrCat(NodeLabel(n), " combines channels with '", in,
                                  "', which is neither traced nor a constant"));
        continue;
      }
      const int64_t idx = static_cast<int64_t>(c->dims.size()) + from_end;
      if (idx < 0 || c->dims[idx] == 1) continue;  // broadcast along the channels
      if (from_end == 0) {
        Mark(*first, absl::StrCat(NodeLabel(n), ": the channel axis of constant '", in,
                                  "' is unknown"));
      } else if (c->dims[idx] != ext) {
        Mark(*first, absl::StrCat(NodeLabel(n), " constant '", in, "' has ", c->dims[idx],
                                  " entries on the channel axis, ", ext, " traced"));
      } else {
        AddMembers(*first, in, static_cast<int>(idx), Role::kVector);
      }
    }
    ValueChannels y = *first;
    y.spatial = -1;
    for (const ValueChannels* t : tracked) y.rank = std::max(y.rank, t->rank);
    if (y.rank < 0) y.axis = from_end;
    Set(n.outputs[0], std::move(y));
  }

  void VisitConcat(const ir::Node& n) {
    std::vector<const ValueChannels*> tracked;
    for (const std::string& in : n.inputs)
      if (const ValueChannels* v = Tracked(in)) tracked.push_back(v);
    const ValueChannels& first = *tracked[0];
    int64_t axis = IntAttr(n, "axis", 1);
    const int from_end = AxisFromEnd(first);
    const bool channel_axis =
        (axis < 0 && axis == from_end) ||
        (axis >= 0 && first.rank >= 0 && axis == AxisFromStart(first));
    if (!channel_axis) {
      if (tracked.size() != n.inputs.size()) {
        Mark(first, absl::StrCat(NodeLabel(n), " joins traced and untraced values off the "
                                 "channel axis"));
        return;
      }
      for (size_t i = 1; i < tracked.size(); ++i) Couple(n, first, *tracked[i]);
      ValueChannels y = first;
      y.spatial = -1;
      Set(n.outputs[0], std::move(y));
      return;
    }
    ValueChannels y = first;
    y.segments.clear();
    y.spatial = -1;
    for (const std::string& in : n.inputs) {
      if (const ValueChannels* v = Tracked(in)) {
        if (AxisFromEnd(*v) != from_end || v->spatial != first.spatial) {
          for (const ValueChannels* t : tracked)
            Mark(*t, absl::StrCat(NodeLabel(n), " inputs differ in channel layout"));
          return;
        }
        y.segments.insert(y.segments.end(), v->segments.begin(), v->segments.end());
        continue;
      }
      std::optional<int64_t> d = StaticDim(in, from_end);
      if (from_end == 0 || !d) {
        for (const ValueChannels* t : tracked)
          Mark(*t, absl::StrCat(NodeLabel(n), " input '", in,
                                "' has no static size on the channel axis"));
        return;
      }
      y.segments.push_back({-1, 0, *d, 1});
    }
    y.spatial = first.spatial;
    Set(n.outputs[0], std::move(y));
  }

  void VisitSplit(const ir::Node& n, const ValueChannels& x) {
    int64_t axis = IntAttr(n, "axis", 0);
    if (axis < 0 && x.rank >= 0) axis += x.rank;
    const bool channel_axis = (axis >= 0 && axis == AxisFromStart(x)) ||
                              (axis < 0 && axis == AxisFromEnd(x));
    if (!channel_axis) {
      if (axis < 0 || x.rank < 0) {
        Mark(x, absl::StrCat(NodeLabel(n), ": the split axis is unknown relative to the channels"));
        return;
      }
      for (const std::string& out : n.outputs) Set(out, x);  // split off the channel axis
      return;
    }
    std::vector<int64_t> sizes;
    if (const ir::Attribute* a = n.FindAttribute("split")) {
      sizes = a->ints;
    } else if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
      const ir::Tensor* t = g_.FindInitializer(n.inputs[1]);
      if (t == nullptr || t->dtype != ir::DType::kI64 || init_readers_[t->name] > 1) {
        Mark(x, absl::StrCat(NodeLabel(n), " sizes '", n.inputs[1],
                             "' are not a constant int64 tensor of this node alone"));
        return;
      }
      sizes.resize(t->data.size() / sizeof(int64_t));
      std::memcpy(sizes.data(), t->data.data(), sizes.size() * sizeof(int64_t));
    }
    if (sizes.size() != n.outputs.size() ||
        std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != Extent(x)) {
      Mark(x, absl::StrCat(NodeLabel(n), " has no explicit sizes summing to the ", Extent(x),
                           " channels"));
      return;
    }
    std::vector<ValueChannels> outs(sizes.size(), x);
    int64_t lo = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const int64_t hi = lo + sizes[i];
      outs[i].segments.clear();
      outs[i].spatial = x.spatial;
      int64_t off = 0;
      for (const ChannelSegment& s : x.segments) {
        const int64_t len = s.count * s.width, a = std::max(lo, off), b = std::min(hi, off + len);
        if (a < b) {
          if ((a - off) % s.width != 0 || (b - off) % s.width != 0) {
            Mark(x, absl::StrCat(NodeLabel(n), " cuts through the features of one channel"));
            return;
          }
          outs[i].segments.push_back(
              {s.group, s.begin + (a - off) / s.width, (b - a) / s.width, s.width});
        }
        off += len;
      }
      lo = hi;
    }
    for (size_t i = 0; i < outs.size(); ++i) Set(n.outputs[i], std::move(outs[i]));
    splits_.push_back({current_, n.outputs});
  }

  void VisitFlatten(const ir::Node& n, const ValueChannels& x) {
    const int64_t axis = IntAttr(n, "axis", 1);
    if (axis != 1 || AxisFromStart(x) != 1) {
      Mark(x, absl::StrCat(NodeLabel(n), " (axis ", axis, ") does not keep channels on axis 1"));
      return;
    }
    if (x.spatial < 0) {
      Mark(x, absl::StrCat(NodeLabel(n), ": the spatial size of '", n.inputs[0],
                           "' is not static, so a channel's features are unknown"));
      return;
    }
    ValueChannels y = x;
    for (ChannelSegment& s : y.segments) s.width *= x.spatial;
    y.rank = 2;
    y.spatial = 1;
    Set(n.outputs[0], std::move(y));
  }

  void Visit(const ir::Node& n) {
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

  absl::StatusOr<ChannelGroups> Finish() {
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

  const ir::Graph& g_;
  std::map<std::string, int> init_readers_;
  std::set<std::string> graph_inputs_;
  std::vector<Space> spaces_;
  std::vector<int> parent_;
  std::map<std::string, ValueChannels> values_;
  std::vector<ChannelAttribute> attributes_;
  std::vector<ChannelSplit> splits_;
  std::map<std::string, size_t> weight_nodes_;
  size_t current_ = 0;  // index of the node being visited
};

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
