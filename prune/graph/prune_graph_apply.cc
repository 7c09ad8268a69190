// Channel importance, selection and removal over ChannelGroups.
#include "prune/graph/prune_graph_apply.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

#include "absl/strings/str_cat.h"
#include "quantize/weight_matrix.h"
#include "support/status_macros.h"

namespace slimpack::prune {
namespace {

using Role = ChannelMember::Role;

const ir::Node* FindNode(const ir::Graph& g, size_t index) {
  return index < g.nodes.size() ? &g.nodes[index] : nullptr;
}

bool IsConvOp(const ir::Node& n) { return n.op_type == "Conv" || n.op_type == "FusedConv"; }
bool IsGemmOp(const ir::Node& n) { return n.op_type == "Gemm" || n.op_type == "FusedGemm"; }

// Maps a flat element index of a weight to the input feature it multiplies.
struct FeatureMap {
  enum Kind { kConv, kRows, kCols } kind = kRows;
  int64_t d1 = 1, ks = 1, out_per_group = 1;
  int64_t operator()(int64_t idx) const {
    switch (kind) {
      case kConv: {
        const int64_t o = idx / (d1 * ks), j = (idx / ks) % d1;
        return (o / out_per_group) * d1 + j;
      }
      case kRows: return idx / d1;
      case kCols: return idx % d1;
    }
    return 0;
  }
};

absl::StatusOr<FeatureMap> FeatureMapOf(const ir::Node& n, const ir::Tensor& w) {
  FeatureMap f;
  if (IsConvOp(n)) {
    f.kind = FeatureMap::kConv;
    f.d1 = w.dims[1];
    f.ks = 1;
    for (size_t i = 2; i < w.dims.size(); ++i) f.ks *= w.dims[i];
    f.out_per_group = std::max<int64_t>(1, w.dims[0] / n.IntAttrOr("group", 1));
    return f;
  }
  f.d1 = w.dims[1];
  f.kind = IsGemmOp(n) && n.IntAttrOr("transB", 0) != 0 ? FeatureMap::kCols : FeatureMap::kRows;
  return f;
}

// Keeps `keep` indices of axis `axis` of a row-major tensor.
std::vector<float> KeepAlong(const std::vector<float>& v, std::vector<int64_t>& dims, int axis,
                             const std::vector<int64_t>& keep) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  std::vector<float> out;
  out.reserve(outer * keep.size() * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : keep) {
      const float* p = v.data() + (o * dims[axis] + k) * inner;
      out.insert(out.end(), p, p + inner);
    }
  dims[axis] = static_cast<int64_t>(keep.size());
  return out;
}

std::vector<int64_t> Complement(int64_t n, const std::set<int64_t>& removed) {
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i)
    if (!removed.count(i)) keep.push_back(i);
  return keep;
}

// [a, b] row-major -> [b, a].
std::vector<float> Transpose(const std::vector<float>& w, int64_t a, int64_t b) {
  std::vector<float> t(w.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j) t[j * a + i] = w[i * b + j];
  return t;
}

}  // namespace

bool IsRefitConsumer(const ir::Node& n, const ir::Tensor& w) {
  if (IsGemmOp(n)) return n.IntAttrOr("transA", 0) == 0 && w.dims.size() == 2;
  if (n.op_type == "MatMul" || n.op_type == "MatMulAdd") return w.dims.size() == 2;
  if (IsConvOp(n)) {
    if (n.IntAttrOr("group", 1) != 1 || w.dims.size() < 3) return false;
    for (size_t i = 2; i < w.dims.size(); ++i)
      if (w.dims[i] != 1) return false;
    return true;
  }
  return false;
}

absl::StatusOr<std::vector<double>> ChannelImportance(const ir::Graph& graph,
                                                      const ChannelGroups& groups, int group,
                                                      Criterion criterion,
                                                      const WeightInputs& inputs) {
  const ChannelGroup& g = groups.groups[group];
  std::vector<double> score(g.channels, 0.0);
  for (const ChannelMember& m : g.members) {
    // Only weights score: biases and BatchNorm statistics (running mean,
    // variance) are not on the scale of the weights they travel with.
    if (m.role == Role::kVector) continue;
    const ir::Tensor* t = graph.FindInitializer(m.tensor);
    if (t == nullptr) return absl::InternalError("no initializer '" + m.tensor + "'");
    ASSIGN_OR_RETURN(std::vector<float> w, quantize::ToF32(*t));
    const std::vector<double>* rms = nullptr;
    FeatureMap feature;
    if (criterion == Criterion::kActivation && m.role != Role::kVector) {
      auto it = inputs.find(m.tensor);
      auto node_it = groups.weight_nodes.find(m.tensor);
      const ir::Node* n =
          node_it == groups.weight_nodes.end() ? nullptr : FindNode(graph, node_it->second);
      if (it == inputs.end() || n == nullptr) {
        return absl::InternalError("no calibration input statistics for weight '" + m.tensor +
                                   "'");
      }
      rms = &it->second.rms;
      ASSIGN_OR_RETURN(feature, FeatureMapOf(*n, *t));
    }
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < m.axis; ++i) outer *= t->dims[i];
    for (size_t i = m.axis + 1; i < t->dims.size(); ++i) inner *= t->dims[i];
    const int64_t extent = t->dims[m.axis];
    for (int64_t c = m.begin; c < m.begin + m.count; ++c) {
      double acc = 0;
      const int64_t lo = m.offset + (c - m.begin) * m.width;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = lo; k < lo + m.width; ++k)
          for (int64_t r = 0; r < inner; ++r) {
            const int64_t idx = (o * extent + k) * inner + r;
            const double v = w[idx];
            switch (criterion) {
              case Criterion::kL1: acc += std::fabs(v); break;
              case Criterion::kL2: acc += v * v; break;
              default: {  // kActivation (PruneGraph rejects the others)
                const int64_t f = rms ? feature(idx) : -1;
                acc += std::fabs(v) * (rms && f < static_cast<int64_t>(rms->size()) ? (*rms)[f]
                                                                                  : 1.0);
                break;
              }
            }
          }
      score[c] += acc;
    }
  }
  if (criterion == Criterion::kL2)
    for (double& s : score) s = std::sqrt(s);
  return score;
}

std::vector<int64_t> SelectRemoved(const std::vector<double>& score, double ratio) {
  const int64_t n = static_cast<int64_t>(score.size());
  const int64_t drop = std::min<int64_t>(static_cast<int64_t>(std::floor(ratio * n)), n - 1);
  if (drop <= 0) return {};
  std::vector<int64_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  // Most important first; stable, so among equal scores the lower index
  // ranks first and is kept.
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  std::vector<int64_t> removed(idx.end() - drop, idx.end());
  std::sort(removed.begin(), removed.end());
  return removed;
}

absl::StatusOr<ApplyReport> ApplyChannelPruning(ir::Graph& graph, const ChannelGroups& groups,
                                                const std::map<int, std::vector<int64_t>>& removed,
                                                bool refit, const WeightInputs& inputs,
                                                double damp) {
  // Removed indices per tensor and axis.
  std::map<std::string, std::map<int, std::set<int64_t>>> cut;
  std::map<std::string, int> input_axis;  // consumer weights: their input axis
  for (const auto& [gi, channels] : removed) {
    for (const ChannelMember& m : groups.groups[gi].members) {
      for (int64_t c : channels) {
        if (c < m.begin || c >= m.begin + m.count) continue;
        for (int64_t k = 0; k < m.width; ++k)
          cut[m.tensor][m.axis].insert(m.offset + (c - m.begin) * m.width + k);
      }
      if (m.role == Role::kInput) input_axis[m.tensor] = m.axis;
    }
  }
  ApplyReport report;
  for (auto& [name, axes] : cut) {
    ir::Tensor* t = graph.FindMutableInitializer(name);
    if (t == nullptr) return absl::InternalError("no initializer '" + name + "' to prune");
    ASSIGN_OR_RETURN(std::vector<float> v, quantize::ToF32(*t));
    std::vector<int64_t> dims = t->dims;
    auto in_axis = input_axis.find(name);
    auto stats = inputs.find(name);
    auto node_it = groups.weight_nodes.find(name);
    const ir::Node* node =
        node_it == groups.weight_nodes.end() ? nullptr : FindNode(graph, node_it->second);
    if (refit && in_axis != input_axis.end() && axes.count(in_axis->second) &&
        stats != inputs.end() && !stats->second.xtx.empty() && node != nullptr &&
        IsRefitConsumer(*node, *t)) {
      // As a [rows = outputs, n = inputs] matrix.
      const int a = in_axis->second;
      const int64_t n = dims[a], rows = static_cast<int64_t>(v.size()) / n;
      const bool transposed = a == 0;  // [K, N] (MatMul B, Gemm without transB)
      std::vector<float> w = transposed ? Transpose(v, n, rows) : v;
      if (static_cast<int64_t>(stats->second.xtx.size()) != n * n) {
        return absl::InternalError(absl::StrCat("X^T X of '", name, "' has ",
                                                stats->second.xtx.size(), " entries, expected ",
                                                n * n));
      }
      const std::vector<int64_t> keep = Complement(n, axes[a]);
      std::vector<float> w2 = RefitColumns(w, rows, n, stats->second.xtx, keep, damp);
      const int64_t k = static_cast<int64_t>(keep.size());
      v = transposed ? Transpose(w2, rows, k) : w2;
      dims[a] = k;
      axes.erase(a);
      report.refit.push_back(name);
    }
    for (const auto& [axis, gone] : axes)
      v = KeepAlong(v, dims, axis, Complement(dims[axis], gone));
    ir::Tensor nt = quantize::F32Like(*t, v);
    nt.dims = dims;
    *t = std::move(nt);
  }

  auto kept_extent = [&](const ValueChannels& vc) {
    int64_t e = 0;
    for (const ChannelSegment& s : vc.segments) {
      int64_t kept = s.count;
      auto it = s.group >= 0 ? removed.find(s.group) : removed.end();
      if (it != removed.end()) {
        for (int64_t c : it->second) kept -= (c >= s.begin && c < s.begin + s.count) ? 1 : 0;
      }
      e += kept * s.width;
    }
    return e;
  };
  auto resize = [&](ir::ValueInfo& vi, const ValueChannels& vc) {
    if (!vi.shape.rank_known()) return;
    const int64_t r = static_cast<int64_t>(vi.shape.rank());
    const int64_t a = vc.axis >= 0 ? vc.axis : r + vc.axis;
    if (a < 0 || a >= r || !vi.shape.dim(a).is_static()) return;
    std::vector<ir::Dim> d = vi.shape.dims();
    d[a] = ir::Dim::Static(kept_extent(vc));
    vi.shape = ir::Shape(std::move(d));
  };
  for (auto& [name, vi] : graph.value_info) {
    auto it = groups.values.find(name);
    if (it != groups.values.end()) resize(vi, it->second);
  }
  for (ir::ValueInfo& vi : graph.outputs) {
    auto it = groups.values.find(vi.name);
    if (it != groups.values.end()) resize(vi, it->second);
  }
  for (const ChannelAttribute& ca : groups.attributes) {
    auto it = groups.values.find(ca.value);
    if (it == groups.values.end() || ca.node >= graph.nodes.size()) {
      return absl::InternalError("untraced value " + ca.value);
    }
    graph.nodes[ca.node].attributes[ca.attribute] = ir::Attribute::Int(kept_extent(it->second));
  }
  for (const ChannelSplit& sp : groups.splits) {
    std::vector<int64_t> sizes;
    for (const std::string& out : sp.outputs) {
      auto it = groups.values.find(out);
      if (it == groups.values.end()) return absl::InternalError("untraced value " + out);
      sizes.push_back(kept_extent(it->second));
    }
    if (sp.node >= graph.nodes.size()) return absl::InternalError("no Split node to resize");
    ir::Node& n = graph.nodes[sp.node];
    if (n.FindAttribute("split") != nullptr) {
      n.attributes["split"] = ir::Attribute::Ints(sizes);
      continue;
    }
    ir::Tensor* t = n.inputs.size() > 1 ? graph.FindMutableInitializer(n.inputs[1]) : nullptr;
    if (t == nullptr) return absl::InternalError("no split sizes for Split '" + n.name + "'");
    std::vector<uint8_t> bytes(sizes.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), sizes.data(), bytes.size());
    t->data = ir::TensorData::Owned(std::move(bytes));
  }
  return report;
}

}  // namespace slimpack::prune
