// The f16 plan rewrite (see widen_f16.h).
#include "runtime/widen_f16.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <functional>
#include <set>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/float_convert.h"

namespace slimpack::runtime {
namespace {

using ir::DType;

// ONNX TensorProto.DataType numbers.
constexpr int64_t kOnnxFloat = 1;
constexpr int64_t kOnnxFloat16 = 10;

bool DefaultDomain(const ir::Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

bool IsCastTo(const ir::Node& n, int64_t to) {
  return DefaultDomain(n) && n.op_type == "Cast" && n.IntAttrOr("to", 0) == to;
}

// Ops whose `dtype` attribute picks a float output type.
bool HasDTypeAttr(const ir::Node& n) {
  static const std::set<std::string> kOps = {"EyeLike",          "RandomNormal",
                                             "RandomUniform",    "RandomNormalLike",
                                             "RandomUniformLike", "Bernoulli"};
  return DefaultDomain(n) && kOps.count(n.op_type) > 0;
}

bool IsF16Tensor(const ir::Tensor& t) {
  return t.dtype == DType::kF16 && !t.quant.quantized();
}

// The scale / zero-point tensors quantized initializers of `g` name: an f16
// scale belongs to its layout (every reader widens it exactly), not to an
// f16 graph, so it neither makes the graph f16 nor gets widened.
std::unordered_set<std::string> QuantParams(const ir::Graph& g) {
  std::unordered_set<std::string> out;
  for (const ir::Tensor& t : g.initializers()) {
    if (!t.quant.quantized()) continue;
    out.insert(t.quant.scale);
    if (!t.quant.zero_point.empty()) out.insert(t.quant.zero_point);
  }
  return out;
}

// The f32 tensor holding exactly the values of the f16 tensor `t`.
ir::Tensor Widened(const ir::Tensor& t) {
  ir::Tensor out = t;
  const uint64_t n = t.data.size() / 2;
  std::vector<uint8_t> bytes(n * 4);
  for (uint64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, t.data.data() + 2 * i, 2);
    const float f = ir::F16ToF32(h);
    std::memcpy(bytes.data() + 4 * i, &f, 4);
  }
  out.dtype = DType::kF32;
  out.data = ir::TensorData::Owned(std::move(bytes));
  return out;
}

// Every subgraph held by `n`'s attributes.
std::vector<std::shared_ptr<ir::Graph>*> SubgraphSlots(ir::Node& n) {
  std::vector<std::shared_ptr<ir::Graph>*> out;
  for (auto& [name, a] : n.attributes) {
    if (a.kind == ir::Attribute::Kind::kGraph && a.g) out.push_back(&a.g);
    for (auto& g : a.graphs) {
      if (g) out.push_back(&g);
    }
  }
  return out;
}

bool HoldsF16Node(const ir::Node& n) {
  if (IsCastTo(n, kOnnxFloat16)) return true;
  if (HasDTypeAttr(n) && n.IntAttrOr("dtype", 0) == kOnnxFloat16) return true;
  for (const auto& [name, a] : n.attributes) {
    if (a.kind == ir::Attribute::Kind::kTensor && a.t && IsF16Tensor(*a.t)) return true;
    if (a.kind == ir::Attribute::Kind::kGraph && a.g && HoldsF16(*a.g)) return true;
    for (const auto& g : a.graphs) {
      if (g && HoldsF16(*g)) return true;
    }
  }
  return false;
}

// Names of every value and node in `g` and its subgraphs.
void CollectNames(const ir::Graph& g, std::unordered_set<std::string>* names) {
  for (const ir::ValueInfo& v : g.inputs) names->insert(v.name);
  for (const ir::ValueInfo& v : g.outputs) names->insert(v.name);
  for (const auto& [name, v] : g.value_info) names->insert(name);
  for (const ir::Tensor& t : g.initializers()) names->insert(t.name);
  for (const ir::Node& n : g.nodes) {
    names->insert(n.name);
    for (const std::string& s : n.inputs) names->insert(s);
    for (const std::string& s : n.outputs) names->insert(s);
    for (const auto& [name, a] : n.attributes) {
      if (a.kind == ir::Attribute::Kind::kGraph && a.g) CollectNames(*a.g, names);
      for (const auto& sub : a.graphs) {
        if (sub) CollectNames(*sub, names);
      }
    }
  }
}

bool Defines(const ir::Graph& g, const std::string& name) {
  for (const ir::ValueInfo& v : g.inputs) {
    if (v.name == name) return true;
  }
  if (g.FindInitializer(name) != nullptr) return true;
  for (const ir::Node& n : g.nodes) {
    for (const std::string& o : n.outputs) {
      if (o == name) return true;
    }
  }
  return false;
}

// True when a subgraph of `n` reads `name` from the enclosing scope.
bool SubgraphsRead(const ir::Node& n, const std::string& name) {
  for (const auto& [attr, a] : n.attributes) {
    std::vector<const ir::Graph*> subs;
    if (a.kind == ir::Attribute::Kind::kGraph && a.g) subs.push_back(a.g.get());
    for (const auto& g : a.graphs) {
      if (g) subs.push_back(g.get());
    }
    for (const ir::Graph* g : subs) {
      for (const std::string& r : g->OuterScopeReferences()) {
        if (r == name) return true;
      }
    }
  }
  return false;
}

// Renames reads of `from` to `to` in `g` (nodes for which `keep` is false)
// and in the subgraphs that see `from` from outside.
void RenameReads(ir::Graph& g, const std::string& from, const std::string& to,
                 const std::function<bool(const ir::Node&)>& keep) {
  for (ir::Node& n : g.nodes) {
    if (!keep(n)) {
      for (std::string& in : n.inputs) {
        if (in == from) in = to;
      }
    }
    for (std::shared_ptr<ir::Graph>* slot : SubgraphSlots(n)) {
      if (!Defines(**slot, from)) {
        RenameReads(**slot, from, to, [](const ir::Node&) { return false; });
      }
    }
  }
}

// True when something in `g` other than a Cast to FLOAT reads `name`.
bool ReadAsF16(const ir::Graph& g, const std::string& name) {
  for (const ir::Node& n : g.nodes) {
    const bool reads = std::find(n.inputs.begin(), n.inputs.end(), name) != n.inputs.end();
    if (reads && !IsCastTo(n, kOnnxFloat)) return true;
    if (SubgraphsRead(n, name)) return true;
  }
  return false;
}

// The dtype of `name` as far as `g` tells: initializer, declared type,
// value_info or the Cast that makes it.
std::optional<DType> KnownDType(const ir::Graph& g, const std::string& name) {
  if (const ir::Tensor* t = g.FindInitializer(name)) return t->dtype;
  if (std::optional<ir::ValueInfo> v = g.FindValueInfo(name);
      v && v->dtype != DType::kUndefined) {
    return v->dtype;
  }
  for (const ir::Node& n : g.nodes) {
    if (n.op_type == "Cast" && DefaultDomain(n) && !n.outputs.empty() && n.outputs[0] == name) {
      return n.IntAttrOr("to", 0) == kOnnxFloat16 ? DType::kF16 : DType::kUndefined;
    }
  }
  return std::nullopt;
}

// CastLike(x, like) with an f16 `like` becomes Cast(to=FLOAT16) (the
// rewrite then keeps its rounding); Unimplemented when like's dtype is
// unknown. Checked over every graph before anything changes.
absl::Status ResolveCastLike(ir::Graph& g, bool apply) {
  for (ir::Node& n : g.nodes) {
    for (std::shared_ptr<ir::Graph>* slot : SubgraphSlots(n)) {
      if (!apply) {
        absl::Status s = ResolveCastLike(**slot, false);
        if (!s.ok()) return s;
      }
    }
    if (n.op_type != "CastLike" || !DefaultDomain(n) || n.inputs.size() < 2) continue;
    std::optional<DType> like = KnownDType(g, n.inputs[1]);
    if (!like) {
      return absl::UnimplementedError(absl::StrCat(
          "computing the f16 graph in f32: CastLike node '", n.name, "' casts to the dtype of '",
          n.inputs[1], "', which is not known (no value_info); run shape inference first"));
    }
    if (apply && *like == DType::kF16) {
      n.op_type = "Cast";
      n.inputs.resize(1);
      n.attributes["to"] = ir::Attribute::Int(kOnnxFloat16);
    }
  }
  return absl::OkStatus();
}

class Rewriter {
 public:
  Rewriter(std::unordered_set<std::string> names, F16Widening* stats)
      : names_(std::move(names)), stats_(stats) {}

  // `base`, or `base_<k>` for the first k that is free; reserved.
  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = absl::StrCat(base, "_", k);
    names_.insert(name);
    return name;
  }

  // Retypes everything in `g` and its subgraphs; `main` keeps the declared
  // f16 inputs and outputs of the top-level graph at their boundary.
  void Rewrite(ir::Graph& g, bool main) {
    (void)ResolveCastLike(g, /*apply=*/true);  // checked before: cannot fail
    WidenInitializers(g);
    for (ir::Node& n : g.nodes) RetypeNode(n);
    // What a Cast to FLOAT16 makes stays f16 (KeepCastRounding renames it
    // when others read it); every other f16 value is now computed in f32.
    std::set<std::string> cast_results;
    for (const ir::Node& n : g.nodes) {
      if (IsCastTo(n, kOnnxFloat16) && !n.outputs.empty()) cast_results.insert(n.outputs[0]);
    }
    for (auto& [name, v] : g.value_info) {
      if (!cast_results.count(name)) Retype(v);
    }
    if (!main) {
      for (ir::ValueInfo& v : g.inputs) Retype(v);
      for (ir::ValueInfo& v : g.outputs) Retype(v);
    }
    std::vector<ir::Node> front, back;
    std::vector<std::vector<ir::Node>> after(g.nodes.size());
    KeepCastRounding(g, main, after);
    if (main) {
      CastInputs(g, front);
      CastOutputs(g, after, back);
    }
    std::vector<ir::Node> nodes = std::move(front);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      nodes.push_back(std::move(g.nodes[i]));
      for (ir::Node& n : after[i]) nodes.push_back(std::move(n));
    }
    for (ir::Node& n : back) nodes.push_back(std::move(n));
    g.nodes = std::move(nodes);
  }

 private:
  void Retype(ir::ValueInfo& v) {
    if (v.dtype != DType::kF16) return;
    v.dtype = DType::kF32;
    ++stats_->retyped;
  }

  void WidenInitializers(ir::Graph& g) {
    std::vector<std::string> half;
    const std::unordered_set<std::string> params = QuantParams(g);
    for (const ir::Tensor& t : g.initializers()) {
      if (IsF16Tensor(t) && !params.count(t.name)) half.push_back(t.name);
    }
    for (const std::string& name : half) {
      ir::Tensor* t = g.FindMutableInitializer(name);
      *t = Widened(*t);
      ++stats_->initializers;
    }
  }

  void RetypeNode(ir::Node& n) {
    for (auto& [name, a] : n.attributes) {
      // Attribute tensors and subgraphs may be shared with the caller's
      // graph: replaced by rewritten copies, never edited in place.
      if (a.kind == ir::Attribute::Kind::kTensor && a.t && IsF16Tensor(*a.t)) {
        a.t = std::make_shared<ir::Tensor>(Widened(*a.t));
        ++stats_->initializers;
      }
    }
    for (std::shared_ptr<ir::Graph>* slot : SubgraphSlots(n)) {
      auto copy = std::make_shared<ir::Graph>(**slot);
      Rewrite(*copy, /*main=*/false);
      *slot = std::move(copy);
    }
    if (HasDTypeAttr(n) && n.IntAttrOr("dtype", 0) == kOnnxFloat16) {
      n.attributes["dtype"] = ir::Attribute::Int(kOnnxFloat);
      ++stats_->retyped;
    }
  }

  // Cast(to=FLOAT16) -> v becomes Cast(to=FLOAT16) -> v_f16, then
  // Cast(to=FLOAT) -> v, unless only Casts to FLOAT read v (they widen it
  // themselves) or v is a declared f16 output of the main graph.
  void KeepCastRounding(ir::Graph& g, bool main, std::vector<std::vector<ir::Node>>& after) {
    // A Cast to FLOAT16 that makes a main-graph output stays as it is (its
    // result is f16 whatever the output declares); CastOutputs widens it
    // for other readers.
    std::set<std::string> outputs;
    if (main) {
      for (const ir::ValueInfo& v : g.outputs) outputs.insert(v.name);
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      ir::Node& n = g.nodes[i];
      if (!IsCastTo(n, kOnnxFloat16) || n.outputs.empty() || n.outputs[0].empty()) continue;
      const std::string v = n.outputs[0];
      if (outputs.count(v)) continue;
      const bool output = std::any_of(g.outputs.begin(), g.outputs.end(),
                                      [&](const ir::ValueInfo& o) { return o.name == v; });
      if (!output && !ReadAsF16(g, v)) continue;
      const std::string half = Fresh(v + "_f16");
      n.outputs[0] = half;
      after[i].push_back(CastNode(Fresh(n.name + "_to_f32"), half, v, kOnnxFloat, n.provenance));
      AddValueInfo(g, half, v, DType::kF16);
      if (auto it = g.value_info.find(v); it != g.value_info.end()) it->second.dtype = DType::kF32;
      ++stats_->roundings;
    }
  }

  // Each f16 input read as f16 gets `<x>_f32 = Cast<to=FLOAT>(x)` first.
  void CastInputs(ir::Graph& g, std::vector<ir::Node>& front) {
    for (const ir::ValueInfo& in : g.inputs) {
      if (in.dtype != DType::kF16 || !ReadAsF16(g, in.name)) continue;
      const std::string wide = Fresh(in.name + "_f32");
      RenameReads(g, in.name, wide, [](const ir::Node& n) { return IsCastTo(n, kOnnxFloat); });
      front.push_back(CastNode(Fresh(in.name + "_to_f32"), in.name, wide, kOnnxFloat, {}));
      AddValueInfo(g, wide, in.name, DType::kF32);
      ++stats_->inputs;
    }
  }

  // Each f16 output not made by a Cast to FLOAT16 is computed as `<y>_f32`
  // and rounded by `y = Cast<to=FLOAT16>(<y>_f32)` at the end. An output
  // that a Cast to FLOAT16 makes (whatever its declared type) keeps it; its
  // other readers get the value widened again.
  void CastOutputs(ir::Graph& g, std::vector<std::vector<ir::Node>>& after,
                   std::vector<ir::Node>& back) {
    std::set<std::string> done;
    for (const ir::ValueInfo& out : g.outputs) {
      const std::string& y = out.name;
      if (!done.insert(y).second) continue;
      if (std::any_of(g.inputs.begin(), g.inputs.end(),
                      [&](const ir::ValueInfo& in) { return in.name == y; })) {
        continue;  // an input passed through: as given
      }
      size_t producer = g.nodes.size();
      for (size_t i = 0; i < g.nodes.size() && producer == g.nodes.size(); ++i) {
        for (const std::string& o : g.nodes[i].outputs) {
          if (o == y) producer = i;
        }
      }
      const bool cast16 =
          producer < g.nodes.size() && IsCastTo(g.nodes[producer], kOnnxFloat16);
      if (!cast16 && out.dtype != DType::kF16) continue;
      if (cast16) {
        if (!ReadAsF16(g, y)) continue;
        const std::string wide = Fresh(y + "_f32");
        RenameReads(g, y, wide, [](const ir::Node& n) { return IsCastTo(n, kOnnxFloat); });
        after[producer].push_back(CastNode(Fresh(g.nodes[producer].name + "_to_f32"), y, wide,
                                           kOnnxFloat, g.nodes[producer].provenance));
        AddValueInfo(g, wide, y, DType::kF32);
        ++stats_->roundings;
        continue;
      }
      const std::string wide = Fresh(y + "_f32");
      RenameReads(g, y, wide, [](const ir::Node&) { return false; });
      ir::Provenance provenance;
      if (producer < g.nodes.size()) {
        for (std::string& o : g.nodes[producer].outputs) {
          if (o == y) o = wide;
        }
        provenance = g.nodes[producer].provenance;
      } else if (const ir::Tensor* t = g.FindInitializer(y)) {
        ir::Tensor renamed = *t;
        renamed.name = wide;
        provenance = t->provenance;
        g.RemoveInitializer(y);
        (void)g.AddInitializer(std::move(renamed));  // `wide` is fresh
      } else {
        continue;  // undefined output: the plan reports it
      }
      back.push_back(CastNode(Fresh(y + "_to_f16"), wide, y, kOnnxFloat16, provenance));
      AddValueInfo(g, wide, y, DType::kF32);
      g.value_info.erase(y);
      ++stats_->outputs;
    }
  }

  // value_info for a new value: the shape of `like`, dtype `dtype`.
  static void AddValueInfo(ir::Graph& g, const std::string& name, const std::string& like,
                           DType dtype) {
    std::optional<ir::ValueInfo> info = g.FindValueInfo(like);
    if (!info) return;
    info->name = name;
    info->dtype = dtype;
    g.value_info[name] = *std::move(info);
  }

  static ir::Node CastNode(std::string name, std::string in, std::string out, int64_t to,
                           ir::Provenance provenance) {
    ir::Node n;
    n.name = std::move(name);
    n.op_type = "Cast";
    n.inputs = {std::move(in)};
    n.outputs = {std::move(out)};
    n.attributes["to"] = ir::Attribute::Int(to);
    n.provenance = std::move(provenance);
    return n;
  }

  std::unordered_set<std::string> names_;
  F16Widening* stats_;
};

}  // namespace

std::string F16Widening::Summary() const {
  auto count = [](int64_t n, const char* one, const char* many) {
    return absl::StrCat(n, " ", n == 1 ? one : many);
  };
  return absl::StrCat("computed in f32: ",
                      count(initializers, "f16 constant", "f16 constants"), " widened, ",
                      count(inputs, "input", "inputs"), " cast to f32 on entry, ",
                      count(outputs, "output", "outputs"), " cast back to f16, ",
                      count(roundings, "Cast to f16", "Casts to f16"), " kept as rounding, ",
                      count(retyped, "dtype", "dtypes"), " retyped");
}

bool HoldsF16(const ir::Graph& graph) {
  auto half = [](const ir::ValueInfo& v) { return v.dtype == DType::kF16; };
  if (std::any_of(graph.inputs.begin(), graph.inputs.end(), half) ||
      std::any_of(graph.outputs.begin(), graph.outputs.end(), half)) {
    return true;
  }
  for (const auto& [name, v] : graph.value_info) {
    if (half(v)) return true;
  }
  const std::unordered_set<std::string> params = QuantParams(graph);
  for (const ir::Tensor& t : graph.initializers()) {
    if (IsF16Tensor(t) && !params.count(t.name)) return true;
  }
  return std::any_of(graph.nodes.begin(), graph.nodes.end(), HoldsF16Node);
}

absl::StatusOr<F16Widening> WidenF16ToF32(ir::Graph& graph) {
  F16Widening stats;
  if (!HoldsF16(graph)) return stats;
  absl::Status checked = ResolveCastLike(graph, /*apply=*/false);
  if (!checked.ok()) return checked;
  std::unordered_set<std::string> names;
  CollectNames(graph, &names);
  Rewriter rewriter(std::move(names), &stats);
  rewriter.Rewrite(graph, /*main=*/true);
  return stats;
}

}  // namespace slimpack::runtime
