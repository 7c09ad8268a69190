// Graphs of an ONNX-origin manifest (spec.md section 6.1), main graph and
// subgraphs alike. Every tensor reference is resolved to a tensor index and
// every node input is checked to be defined before the node, in its graph or
// an enclosing one, so a runtime never meets a dangling name and can run the
// nodes in their stored order, which the spec requires to be topological.
#include "formats/shard/loader/manifest_graph.h"

#include <limits>
#include <memory>
#include <string>
#include <unordered_set>

namespace slimpack::loader::internal {
namespace {

// Names visible at one point of a graph: its inputs, initializers and the
// outputs of the nodes before that point, plus what the enclosing graph had
// defined before the node holding this subgraph (ONNX scoping: a subgraph
// runs when its node runs, so it cannot read what later nodes produce).
struct Scope {
  std::unordered_set<std::string_view> names;
  // The graph's nodes; every one's name, op type and outputs are parsed
  // before any node is checked.
  const std::vector<Node>* nodes = nullptr;
  const Scope* outer = nullptr;

  bool Defines(std::string_view n) const {
    for (const Scope* s = this; s != nullptr; s = s->outer) {
      if (s->names.count(n)) return true;
    }
    return false;
  }
  // The scope (this one first) whose graph has a node producing `n`, with
  // that node's index; nullptr if no node of any enclosing graph does. Only
  // for error messages (it scans the nodes), to tell a value defined too
  // late (out of order, or a cycle) from one defined nowhere.
  const Scope* FindProducer(std::string_view n, size_t* index) const {
    for (const Scope* s = this; s != nullptr; s = s->outer) {
      for (size_t i = 0; i < s->nodes->size(); ++i) {
        for (const std::string& out : (*s->nodes)[i].outputs) {
          if (out == n) {
            *index = i;
            return s;
          }
        }
      }
    }
    return nullptr;
  }
};

// "'mm'", or "nodes[3] (MatMul)" for a node without a name.
std::string NodeLabel(const Node& node, size_t index) {
  if (!node.name.empty()) return "'" + node.name + "'";
  return "nodes[" + std::to_string(index) + "] (" + node.op_type + ")";
}

Status ExpectObject(const JsonValue& v, const ObjectPath& path) {
  if (v.is_object()) return OkStatus();
  return Fields(v, path).Error("", "expected an object, found " + DescribeValue(v));
}

Status ParseValueInfo(const JsonValue& v, const ObjectPath& path, GraphValue* out) {
  SLP_RETURN_IF_ERROR(ExpectObject(v, path));
  Fields f(v, path);
  SLP_ASSIGN_OR_RETURN(out->name, f.String("name"));
  SLP_ASSIGN_OR_RETURN(out->dtype, f.String("dtype"));
  shard::DType unused;
  if (out->dtype != "undefined" && !shard::DTypeFromName(out->dtype, &unused)) {
    return f.Error("dtype", "unknown dtype \"" + out->dtype + "\"",
                   StatusCode::kUnimplemented);
  }
  SLP_ASSIGN_OR_RETURN(const JsonValue* shape, f.Required("shape"));
  if (shape->is_null()) return OkStatus();
  if (!shape->is_array()) {
    return f.Error("shape", "expected null or an array, found " + DescribeValue(*shape));
  }
  out->rank_known = true;
  for (const JsonValue& d : shape->items()) {
    GraphDim dim;
    if (d.is_string()) {
      dim.symbol = std::string(d.string_value());
    } else if (!d.is_null()) {
      uint64_t value = 0;
      Status s = CheckSafeUint(d, "shape dim", &value);
      if (!s.ok()) return f.Error("", s.message());
      dim.value = static_cast<int64_t>(value);
    }
    out->dims.push_back(std::move(dim));
  }
  return OkStatus();
}

Status ParseValueInfos(const Fields& f, std::string_view key, bool required,
                       std::vector<GraphValue>* out) {
  const JsonValue* v = f.Optional(key);
  if (v == nullptr) {
    if (required) return f.Error(key, "missing required key");
    return OkStatus();
  }
  if (!v->is_array()) return f.Error(key, "expected an array, found " + DescribeValue(*v));
  out->resize(v->size());
  size_t i = 0;
  for (const JsonValue& item : v->items()) {
    ObjectPath path{nullptr, key, static_cast<int64_t>(i), {}, &f.path()};
    SLP_RETURN_IF_ERROR(ParseValueInfo(item, path, &(*out)[i]));
    ++i;
  }
  return OkStatus();
}

Result<int32_t> ResolveTensor(const Fields& f, std::string_view key,
                              const JsonValue& v, const Manifest& m) {
  if (!v.is_string()) {
    return f.Error(key, "expected a tensor name, found " + DescribeValue(v));
  }
  int32_t idx = m.FindTensor(v.string_value());
  if (idx < 0) {
    return f.Error(key, "refers to missing tensor '" + std::string(v.string_value()) + "'");
  }
  return idx;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

Result<std::string> DecodeHex(const Fields& f, const JsonValue& v) {
  if (!v.is_string() || v.string_value().size() % 2 != 0) {
    return f.Error("value_hex", "expected an even-length lowercase hex string");
  }
  const std::string_view s = v.string_value();
  std::string out(s.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = HexDigit(s[2 * i]), lo = HexDigit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return f.Error("value_hex", "invalid hex digit");
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

Result<double> FloatValue(const Fields& f, const JsonValue& v) {
  if (v.is_number()) return v.number_value();
  if (v.is_string()) {
    const std::string_view s = v.string_value();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  return f.Error("value", "expected a number or \"inf\", \"-inf\", \"nan\", found " +
                              DescribeValue(v));
}

class GraphParser {
 public:
  explicit GraphParser(const Manifest& m) : m_(m) {}

  Status Parse(const JsonValue& v, const ObjectPath& path, const Scope* outer,
               Graph* g) {
    SLP_RETURN_IF_ERROR(ExpectObject(v, path));
    Fields f(v, path);
    SLP_ASSIGN_OR_RETURN(g->name, f.OptionalString("name", ""));
    SLP_RETURN_IF_ERROR(ParseValueInfos(f, "inputs", true, &g->inputs));
    SLP_RETURN_IF_ERROR(ParseValueInfos(f, "outputs", true, &g->outputs));
    SLP_RETURN_IF_ERROR(ParseValueInfos(f, "value_info", false, &g->value_info));

    Scope scope;
    scope.outer = outer;
    scope.nodes = &g->nodes;
    for (const GraphValue& in : g->inputs) scope.names.insert(in.name);
    SLP_ASSIGN_OR_RETURN(const JsonValue* inits,
                         f.RequiredOf("initializers", JsonValue::Type::kArray));
    for (const JsonValue& name : inits->items()) {
      SLP_ASSIGN_OR_RETURN(int32_t idx, ResolveTensor(f, "initializers", name, m_));
      g->initializers.push_back(idx);
      scope.names.insert(m_.tensors[static_cast<size_t>(idx)].name);
    }
    SLP_ASSIGN_OR_RETURN(const JsonValue* nodes,
                         f.RequiredOf("nodes", JsonValue::Type::kArray));
    // g->nodes is sized once here and never resized, so the string_views
    // into node outputs held by `scope` stay valid.
    g->nodes.resize(nodes->size());
    // Every node's name, op type and outputs first, so an input that only a
    // later node (or the node itself) defines can be reported as out of
    // order, naming that node.
    size_t i = 0;
    for (const JsonValue& n : nodes->items()) {
      ObjectPath npath{nullptr, "nodes", static_cast<int64_t>(i), {}, &path};
      SLP_RETURN_IF_ERROR(ExpectObject(n, npath));
      Fields nf(n, npath);
      SLP_ASSIGN_OR_RETURN(g->nodes[i].name, nf.OptionalString("name", ""));
      npath.name = g->nodes[i].name;
      SLP_ASSIGN_OR_RETURN(g->nodes[i].op_type, nf.String("op_type"));
      SLP_ASSIGN_OR_RETURN(g->nodes[i].outputs, StringList(nf, "outputs", true));
      ++i;
    }
    // Then in stored order: a node (and any subgraph it holds) sees only
    // what is defined before it; its outputs become visible after it.
    i = 0;
    for (const JsonValue& n : nodes->items()) {
      Node& node = g->nodes[i];
      ObjectPath npath{nullptr, "nodes", static_cast<int64_t>(i), node.name, &path};
      Fields nf(n, npath);
      SLP_RETURN_IF_ERROR(ParseNode(nf, scope, i, &node));
      for (const std::string& out : node.outputs) {
        if (!out.empty()) scope.names.insert(out);
      }
      ++i;
    }
    for (const GraphValue& out : g->outputs) {
      if (!scope.Defines(out.name)) {
        return f.Error("outputs", "graph output '" + out.name +
                                      "' is not defined by any input, "
                                      "initializer or node");
      }
    }
    return OkStatus();
  }

 private:
  // `index` is the node's position in its graph's "nodes".
  Status ParseNode(const Fields& nf, const Scope& scope, size_t index, Node* node) {
    SLP_ASSIGN_OR_RETURN(node->domain, nf.OptionalString("domain", ""));
    SLP_ASSIGN_OR_RETURN(node->inputs, StringList(nf, "inputs", true));
    SLP_ASSIGN_OR_RETURN(node->source, StringList(nf, "source", false));
    for (const std::string& in : node->inputs) {
      if (in.empty() || scope.Defines(in)) continue;
      size_t producer = 0;
      const Scope* where = scope.FindProducer(in, &producer);
      if (where == nullptr) {
        return nf.Error("inputs", "input '" + in +
                                      "' refers to a missing tensor or value "
                                      "(no graph input, initializer or node "
                                      "output has that name)");
      }
      return nf.Error("inputs", OutOfOrderMessage(scope, index, *node, in, *where,
                                                  producer));
    }
    const JsonValue* attrs = nf.Optional("attributes");
    if (attrs == nullptr) return OkStatus();
    if (!attrs->is_object()) {
      return nf.Error("attributes", "expected an object, found " + DescribeValue(*attrs));
    }
    for (const JsonValue& a : attrs->members()) {
      ObjectPath apath{nullptr, "attributes", -1, a.key(), &nf.path()};
      SLP_RETURN_IF_ERROR(ParseAttribute(a, apath, scope,
                                         &node->attributes[std::string(a.key())]));
    }
    return OkStatus();
  }

  Status ParseAttribute(const JsonValue& v, const ObjectPath& path,
                        const Scope& scope, Attribute* a) {
    SLP_RETURN_IF_ERROR(ExpectObject(v, path));
    Fields f(v, path);
    SLP_ASSIGN_OR_RETURN(std::string type, f.String("type"));
    static const struct {
      const char* name;
      Attribute::Kind kind;
      bool list;
    } kKinds[] = {
        {"float", Attribute::Kind::kFloat, false},
        {"int", Attribute::Kind::kInt, false},
        {"string", Attribute::Kind::kString, false},
        {"tensor", Attribute::Kind::kTensor, false},
        {"graph", Attribute::Kind::kGraph, false},
        {"floats", Attribute::Kind::kFloats, true},
        {"ints", Attribute::Kind::kInts, true},
        {"strings", Attribute::Kind::kStrings, true},
        {"tensors", Attribute::Kind::kTensors, true},
        {"graphs", Attribute::Kind::kGraphs, true},
    };
    bool list = false, found = false;
    for (const auto& k : kKinds) {
      if (type == k.name) {
        a->kind = k.kind;
        list = k.list;
        found = true;
      }
    }
    if (!found) {
      return f.Error("type", "unknown attribute type \"" + type +
                                 "\" (supported: float, int, string, tensor, "
                                 "graph, floats, ints, strings, tensors, graphs)",
                     StatusCode::kUnimplemented);
    }
    const bool is_string = a->kind == Attribute::Kind::kString ||
                           a->kind == Attribute::Kind::kStrings;
    const JsonValue* hex = is_string ? f.Optional("value_hex") : nullptr;
    const JsonValue* value = hex;
    if (value == nullptr) {
      SLP_ASSIGN_OR_RETURN(value, f.Required("value"));
    }
    if (list && !value->is_array()) {
      return f.Error("value", "expected an array for type " + type + ", found " +
                                  DescribeValue(*value));
    }
    if (!list) return ParseAttributeItem(f, *value, hex != nullptr, path, scope, a);
    for (const JsonValue& item : value->items()) {
      SLP_RETURN_IF_ERROR(ParseAttributeItem(f, item, hex != nullptr, path,
                                             scope, a));
    }
    return OkStatus();
  }

  Status ParseAttributeItem(const Fields& f, const JsonValue& item, bool hex,
                            const ObjectPath& path, const Scope& scope,
                            Attribute* a) {
    switch (a->kind) {
      case Attribute::Kind::kFloat:
      case Attribute::Kind::kFloats: {
        SLP_ASSIGN_OR_RETURN(double d, FloatValue(f, item));
        a->floats.push_back(d);
        return OkStatus();
      }
      case Attribute::Kind::kInt:
      case Attribute::Kind::kInts:
        if (!item.is_int()) {
          return f.Error("value", "expected an integer, found " + DescribeValue(item));
        }
        a->ints.push_back(item.int_value());
        return OkStatus();
      case Attribute::Kind::kString:
      case Attribute::Kind::kStrings: {
        if (hex) {
          SLP_ASSIGN_OR_RETURN(std::string bytes, DecodeHex(f, item));
          a->strings.push_back(std::move(bytes));
        } else if (item.is_string()) {
          a->strings.emplace_back(item.string_value());
        } else {
          return f.Error("value", "expected a string, found " + DescribeValue(item));
        }
        return OkStatus();
      }
      case Attribute::Kind::kTensor:
      case Attribute::Kind::kTensors: {
        SLP_ASSIGN_OR_RETURN(int32_t idx, ResolveTensor(f, "value", item, m_));
        a->tensors.push_back(idx);
        return OkStatus();
      }
      case Attribute::Kind::kGraph:
      case Attribute::Kind::kGraphs: {
        auto g = std::make_shared<Graph>();
        ObjectPath gpath{nullptr, "value", static_cast<int64_t>(a->graphs.size()),
                         {}, &path};
        SLP_RETURN_IF_ERROR(Parse(item, gpath, &scope, g.get()));
        a->graphs.push_back(std::move(g));
        return OkStatus();
      }
    }
    return InternalError("unhandled attribute kind");
  }

  // A runtime runs the nodes in stored order, so reading a value that only
  // a later node (or this node itself: a cycle) defines would read garbage.
  static std::string OutOfOrderMessage(const Scope& scope, size_t index,
                                       const Node& node, const std::string& in,
                                       const Scope& where, size_t producer) {
    std::string msg = "node " + NodeLabel(node, index) + " reads '" + in +
                      "' before any node defines it (nodes must be in "
                      "topological order, spec.md section 6.1): '" + in + "' is ";
    const Node& p = (*where.nodes)[producer];
    if (&where == &scope && producer == index) {
      msg += "an output of this node itself (a cycle)";
    } else if (&where == &scope) {
      msg += "produced by the later node " + NodeLabel(p, producer);
    } else {
      msg += "produced by node " + NodeLabel(p, producer) +
             " of an enclosing graph, which does not come before the node "
             "holding this subgraph";
    }
    return msg;
  }

  const Manifest& m_;
};

}  // namespace

Result<std::vector<std::string>> StringList(const Fields& f, std::string_view key,
                                            bool required) {
  std::vector<std::string> out;
  const JsonValue* v = f.Optional(key);
  if (v == nullptr) {
    if (required) return f.Error(key, "missing required key");
    return out;
  }
  if (!v->is_array()) return f.Error(key, "expected an array, found " + DescribeValue(*v));
  out.reserve(v->items().size());
  for (const JsonValue& s : v->items()) {
    if (!s.is_string()) {
      return f.Error(key, "expected an array of strings, found " + DescribeValue(s));
    }
    out.emplace_back(s.string_value());
  }
  return out;
}

Status ParseGraph(const JsonValue& v, const ObjectPath& path, const Manifest& m,
                  Graph* g) {
  return GraphParser(m).Parse(v, path, nullptr, g);
}

}  // namespace slimpack::loader::internal
