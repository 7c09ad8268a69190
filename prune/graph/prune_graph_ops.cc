// Per-op rules of the channel analysis (prune_graph.h): the weight nodes
// that open channel spaces (Conv, Gemm, MatMul) and the ops that carry,
// couple, join or cut them (BatchNorm, binary ops, Concat, Split, Flatten).
// Analyzer::Visit in prune_graph.cc dispatches here; split off only to keep
// each file within the line limit.
#include "prune/graph/prune_graph_internal.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace slimpack::prune::internal {

void Analyzer::VisitConv(const ir::Node& n) {
  const ValueChannels* x = Tracked(n.inputs[0]);
  std::string why;
  const ir::Tensor* w = Weight(n, 1, 3, 5, &why);
  if (w == nullptr) {
    if (x != nullptr) Mark(*x, why);
    return;
  }
  weight_nodes_[w->name] = current_;
  const int64_t group = n.IntAttrOr("group", 1), cout = w->dims[0], cin_per = w->dims[1];
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

void Analyzer::VisitGemm(const ir::Node& n) {
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
  const bool trans_b = n.IntAttrOr("transB", 0) != 0;
  const int64_t k = trans_b ? b->dims[1] : b->dims[0], out = trans_b ? b->dims[0] : b->dims[1];
  if (a != nullptr) {
    const bool axis_ok =
        (a->rank == 2 && AxisFromStart(*a) == 1) || (a->rank < 0 && a->axis == -1);
    if (n.IntAttrOr("transA", 0) != 0 || !axis_ok) {
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

void Analyzer::VisitMatMul(const ir::Node& n) {
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

void Analyzer::VisitBatchNorm(const ir::Node& n, const ValueChannels& x) {
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
bool Analyzer::Couple(const ir::Node& n, const ValueChannels& a, const ValueChannels& b) {
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

void Analyzer::VisitBinary(const ir::Node& n) {
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

void Analyzer::VisitConcat(const ir::Node& n) {
  std::vector<const ValueChannels*> tracked;
  for (const std::string& in : n.inputs)
    if (const ValueChannels* v = Tracked(in)) tracked.push_back(v);
  const ValueChannels& first = *tracked[0];
  int64_t axis = n.IntAttrOr("axis", 1);
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

void Analyzer::VisitSplit(const ir::Node& n, const ValueChannels& x) {
  int64_t axis = n.IntAttrOr("axis", 0);
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

void Analyzer::VisitFlatten(const ir::Node& n, const ValueChannels& x) {
  const int64_t axis = n.IntAttrOr("axis", 1);
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

}  // namespace slimpack::prune::internal
