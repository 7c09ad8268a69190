#include "ir/printer.h"

#include <cstdio>
#include <sstream>

namespace slimpack::ir {
namespace {

// FNV-1a over the bytes: cheap, deterministic, only for telling apart.
uint64_t Fnv1a(const uint8_t* p, uint64_t n) {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

std::string TensorSig(const Tensor& t) {
  char hash[32];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(Fnv1a(t.data.data(), t.data.size())));
  return std::string(DTypeName(t.dtype)) + Shape::FromDims(t.dims).ToString() +
         " #" + hash;
}

void PrintGraphTo(const Graph& g, int indent, std::ostringstream& os);

void PrintAttr(const Attribute& a, int indent, std::ostringstream& os) {
  switch (a.kind) {
    case Attribute::Kind::kFloat: os << a.f; break;
    case Attribute::Kind::kInt: os << a.i; break;
    case Attribute::Kind::kString: os << '"' << a.s << '"'; break;
    case Attribute::Kind::kTensor: os << (a.t ? TensorSig(*a.t) : "null"); break;
    case Attribute::Kind::kGraph:
      if (a.g) PrintGraphTo(*a.g, indent + 2, os);
      break;
    case Attribute::Kind::kFloats:
      os << "[";
      for (size_t i = 0; i < a.floats.size(); ++i) os << (i ? "," : "") << a.floats[i];
      os << "]";
      break;
    case Attribute::Kind::kInts:
      os << "[";
      for (size_t i = 0; i < a.ints.size(); ++i) os << (i ? "," : "") << a.ints[i];
      os << "]";
      break;
    case Attribute::Kind::kStrings:
      os << "[";
      for (size_t i = 0; i < a.strings.size(); ++i) os << (i ? "," : "") << '"' << a.strings[i] << '"';
      os << "]";
      break;
    case Attribute::Kind::kTensors:
      os << "[";
      for (size_t i = 0; i < a.tensors.size(); ++i) os << (i ? "," : "") << TensorSig(*a.tensors[i]);
      os << "]";
      break;
    case Attribute::Kind::kGraphs:
      for (const auto& g : a.graphs) PrintGraphTo(*g, indent + 2, os);
      break;
  }
}

void PrintGraphTo(const Graph& g, int indent, std::ostringstream& os) {
  std::string pad(indent, ' ');
  os << "graph " << g.name << " (";
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    os << (i ? ", " : "") << "%" << g.inputs[i].name << ": "
       << DTypeName(g.inputs[i].dtype) << g.inputs[i].shape.ToString();
  }
  os << ") -> (";
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    os << (i ? ", " : "") << "%" << g.outputs[i].name << ": "
       << DTypeName(g.outputs[i].dtype) << g.outputs[i].shape.ToString();
  }
  os << ") {\n";
  for (const auto& t : g.initializers()) {
    os << pad << "  init %" << t.name << ": " << TensorSig(t) << "\n";
  }
  for (const auto& n : g.nodes) {
    os << pad << "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      os << (i ? ", " : "") << "%" << n.outputs[i];
    }
    os << " = " << (n.domain.empty() ? "" : n.domain + ".") << n.op_type << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      os << (i ? ", " : "") << (n.inputs[i].empty() ? "" : "%" + n.inputs[i]);
    }
    os << ")";
    if (!n.attributes.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, a] : n.attributes) {
        os << (first ? "" : ", ") << k << "=";
        PrintAttr(a, indent + 2, os);
        first = false;
      }
      os << "}";
    }
    os << "  # " << n.name << "\n";
  }
  os << pad << "}";
  if (indent == 0) os << "\n";
}

}  // namespace

std::string PrintGraph(const Graph& graph) {
  std::ostringstream os;
  PrintGraphTo(graph, 0, os);
  return os.str();
}

}  // namespace slimpack::ir
