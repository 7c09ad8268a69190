#include "converter/model_summary.h"

namespace slimpack::converter {
namespace {

void Visit(const ir::Graph& g, ModelSummary& s) {
  for (const auto& t : g.initializers()) {
    auto n = t.NumElements();
    uint64_t elems = n.ok() ? *n : 0;
    ++s.tensor_count;
    s.parameter_count += elems;
    s.parameter_bytes += t.data.size();
    if (t.data.is_view()) s.zero_copy_bytes += t.data.size();
    auto& d = s.by_dtype[std::string(ir::DTypeName(t.dtype))];
    ++d.tensors;
    d.elements += elems;
    d.bytes += t.data.size();
    if (t.role != ir::WeightRole::kUnknown) {
      ++s.by_role[std::string(ir::WeightRoleName(t.role))];
    }
  }
  for (const auto& n : g.nodes) {
    ++s.node_count;
    ++s.op_histogram[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type];
    for (const auto& [key, a] : n.attributes) {
      if (a.kind == ir::Attribute::Kind::kGraph && a.g) {
        ++s.subgraph_count;
        Visit(*a.g, s);
      } else if (a.kind == ir::Attribute::Kind::kGraphs) {
        for (const auto& sg : a.graphs) {
          if (!sg) continue;
          ++s.subgraph_count;
          Visit(*sg, s);
        }
      }
    }
  }
}

}  // namespace

ModelSummary Summarize(const ir::Model& model) {
  ModelSummary s;
  Visit(model.graph, s);
  return s;
}

}  // namespace slimpack::converter
