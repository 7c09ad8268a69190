#include "ir/graph.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

namespace slimpack::ir {

Attribute Attribute::Float(float v) {
  Attribute a;
  a.kind = Kind::kFloat;
  a.f = v;
  return a;
}
Attribute Attribute::Int(int64_t v) {
  Attribute a;
  a.kind = Kind::kInt;
  a.i = v;
  return a;
}
Attribute Attribute::String(std::string v) {
  Attribute a;
  a.kind = Kind::kString;
  a.s = std::move(v);
  return a;
}
Attribute Attribute::Floats(std::vector<float> v) {
  Attribute a;
  a.kind = Kind::kFloats;
  a.floats = std::move(v);
  return a;
}
Attribute Attribute::Ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Kind::kInts;
  a.ints = std::move(v);
  return a;
}
Attribute Attribute::Strings(std::vector<std::string> v) {
  Attribute a;
  a.kind = Kind::kStrings;
  a.strings = std::move(v);
  return a;
}
Attribute Attribute::TensorValue(Tensor v) {
  Attribute a;
  a.kind = Kind::kTensor;
  a.t = std::make_shared<Tensor>(std::move(v));
  return a;
}
Attribute Attribute::GraphValue(std::shared_ptr<Graph> g) {
  Attribute a;
  a.kind = Kind::kGraph;
  a.g = std::move(g);
  return a;
}

std::string_view AttributeKindName(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kTensor: return "tensor";
    case Attribute::Kind::kGraph: return "graph";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kStrings: return "strings";
    case Attribute::Kind::kTensors: return "tensors";
    case Attribute::Kind::kGraphs: return "graphs";
  }
  return "?";
}

const Attribute* Node::FindAttribute(const std::string& n) const {
  auto it = attributes.find(n);
  return it == attributes.end() ? nullptr : &it->second;
}

int64_t Node::IntAttrOr(const std::string& n, int64_t dflt) const {
  const Attribute* a = FindAttribute(n);
  return a != nullptr && a->kind == Attribute::Kind::kInt ? a->i : dflt;
}

bool Node::HasSubgraphs() const {
  for (const auto& [k, a] : attributes) {
    if (a.kind == Attribute::Kind::kGraph ||
        a.kind == Attribute::Kind::kGraphs) {
      return true;
    }
  }
  return false;
}

const Tensor* Graph::FindInitializer(const std::string& n) const {
  auto it = initializer_index_.find(n);
  return it == initializer_index_.end() ? nullptr
                                        : &initializers_[it->second];
}

Tensor* Graph::FindMutableInitializer(const std::string& n) {
  auto it = initializer_index_.find(n);
  return it == initializer_index_.end() ? nullptr
                                        : &initializers_[it->second];
}

absl::Status Graph::AddInitializer(Tensor t) {
  if (initializer_index_.count(t.name)) {
    return absl::AlreadyExistsError("duplicate initializer '" + t.name + "'");
  }
  initializer_index_[t.name] = initializers_.size();
  initializers_.push_back(std::move(t));
  return absl::OkStatus();
}

bool Graph::RemoveInitializer(const std::string& n) {
  auto it = initializer_index_.find(n);
  if (it == initializer_index_.end()) return false;
  initializers_.erase(initializers_.begin() + it->second);
  initializer_index_.clear();
  for (size_t i = 0; i < initializers_.size(); ++i) {
    initializer_index_[initializers_[i].name] = i;
  }
  return true;
}

namespace {

// Collects the outer-scope names every subgraph of `node` reads.
std::vector<std::string> SubgraphReads(const Node& node) {
  std::vector<std::string> out;
  for (const auto& [k, a] : node.attributes) {
    if (a.kind == Attribute::Kind::kGraph && a.g) {
      auto refs = a.g->OuterScopeReferences();
      out.insert(out.end(), refs.begin(), refs.end());
    } else if (a.kind == Attribute::Kind::kGraphs) {
      for (const auto& g : a.graphs) {
        if (!g) continue;
        auto refs = g->OuterScopeReferences();
        out.insert(out.end(), refs.begin(), refs.end());
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> NodeReads(const Node& node) {
  std::vector<std::string> reads;
  std::unordered_set<std::string> seen;
  for (const auto& in : node.inputs) {
    if (!in.empty() && seen.insert(in).second) reads.push_back(in);
  }
  for (auto& r : SubgraphReads(node)) {
    if (seen.insert(r).second) reads.push_back(r);
  }
  return reads;
}

std::string DescribeNode(const Node& node, size_t index) {
  // Importers name every node, but graphs built in memory may leave names
  // empty (the IR allows it); the index still points at one node.
  if (node.name.empty()) {
    return "#" + std::to_string(index) + " (" + node.op_type + ")";
  }
  return "'" + node.name + "' (" + node.op_type + ")";
}

UseDefIndex Graph::BuildUseDefIndex() const {
  UseDefIndex idx;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& out : nodes[i].outputs) {
      if (!out.empty()) idx.producer.emplace(out, i);
    }
    for (const auto& r : NodeReads(nodes[i])) idx.consumers[r].push_back(i);
  }
  return idx;
}

std::vector<std::string> Graph::OuterScopeReferences() const {
  std::unordered_set<std::string> defined;
  for (const auto& v : inputs) defined.insert(v.name);
  for (const auto& t : initializers_) defined.insert(t.name);
  for (const auto& n : nodes) {
    for (const auto& o : n.outputs) defined.insert(o);
  }
  std::vector<std::string> refs;
  std::unordered_set<std::string> seen;
  auto note = [&](const std::string& r) {
    if (!r.empty() && !defined.count(r) && seen.insert(r).second) {
      refs.push_back(r);
    }
  };
  for (const auto& n : nodes) {
    for (const auto& r : NodeReads(n)) note(r);
  }
  for (const auto& o : outputs) note(o.name);
  return refs;
}

absl::StatusOr<std::vector<size_t>> Graph::TopologicalOrder() const {
  UseDefIndex idx = BuildUseDefIndex();
  // pending[i] counts the distinct *nodes* node i waits for, not the values:
  // the release loop below decrements a consumer once per producer, so a
  // node reading two outputs of one producer (Split -> Concat,
  // DynamicQuantizeLinear -> MatMulInteger) must wait for one release, not
  // two, or a valid graph is reported as cyclic.
  //
  // Distinct nodes are counted with a stamp per node (the index of the node
  // that last counted it) rather than a set built per node: this runs on
  // every import, verify and interpreter creation, so its cost must stay
  // linear in nodes + edges.
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<size_t> pending(nodes.size(), 0);
  std::vector<size_t> stamp(nodes.size(), kNone);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& r : NodeReads(nodes[i])) {
      auto it = idx.producer.find(r);
      if (it == idx.producer.end()) continue;
      if (it->second == i) {
        return absl::FailedPreconditionError(
            "graph '" + name + "': node " + DescribeNode(nodes[i], i) +
            " reads its own output '" + r + "': cycle");
      }
      if (stamp[it->second] != i) {
        stamp[it->second] = i;
        ++pending[i];
      }
    }
  }
  std::fill(stamp.begin(), stamp.end(), kNone);
  // Min-heap on the original index keeps the existing order where possible,
  // so the result is deterministic.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    // Each consumer is released once per producer (stamp: last releaser).
    for (const auto& out : nodes[i].outputs) {
      if (out.empty()) continue;
      auto it = idx.consumers.find(out);
      if (it == idx.consumers.end()) continue;
      for (size_t c : it->second) {
        if (stamp[c] == i) continue;
        stamp[c] = i;
        if (--pending[c] == 0) ready.push(c);
      }
    }
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (pending[i] != 0) {
        return absl::FailedPreconditionError(
            "graph '" + name + "' has a cycle through node " +
            DescribeNode(nodes[i], i));
      }
    }
  }
  return order;
}

absl::Status Graph::SortTopologically() {
  auto order = TopologicalOrder();
  if (!order.ok()) return order.status();
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  for (size_t i : *order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
  return absl::OkStatus();
}

std::optional<ValueInfo> Graph::FindValueInfo(const std::string& n) const {
  for (const auto& v : inputs) {
    if (v.name == n) return v;
  }
  for (const auto& v : outputs) {
    if (v.name == n) return v;
  }
  auto it = value_info.find(n);
  if (it != value_info.end()) return it->second;
  if (const Tensor* t = FindInitializer(n)) {
    return ValueInfo{t->name, t->dtype, Shape::FromDims(t->dims)};
  }
  return std::nullopt;
}

}  // namespace slimpack::ir
