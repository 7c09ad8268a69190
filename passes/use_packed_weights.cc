#include "passes/use_packed_weights.h"

#include <string>

#include "ir/quant.h"
#include "runtime/kernels/fused_kernels.h"
#include "runtime/kernels/packed_kernels.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

// Attribute value as int / float, or `def` when absent; false if present
// with another kind (the node is then left alone).
bool IntOr(const ir::Node& n, const std::string& name, int64_t def, int64_t* out) {
  const ir::Attribute* a = n.FindAttribute(name);
  if (a == nullptr) {
    *out = def;
    return true;
  }
  if (a->kind != ir::Attribute::Kind::kInt) return false;
  *out = a->i;
  return true;
}
bool FloatIs(const ir::Node& n, const std::string& name, float want) {
  const ir::Attribute* a = n.FindAttribute(name);
  return a == nullptr || (a->kind == ir::Attribute::Kind::kFloat && a->f == want);
}

// The quantized rank-2 initializer named `name`, its layout checked against
// its scale / zero point; nullptr if `name` is not one.
absl::StatusOr<const ir::Tensor*> QuantizedMatrix(const ir::Graph& g,
                                                  const std::string& name) {
  const ir::Tensor* t = g.FindInitializer(name);
  if (t == nullptr || !t->quant.quantized() || t->dims.size() != 2) return nullptr;
  // The packed kernels read integer codes; FP8 weights are decoded at bind.
  if (t->quant.kind == ir::QuantKind::kFp8E4M3GroupWise) return nullptr;
  const ir::Tensor* scale = g.FindInitializer(t->quant.scale);
  const ir::Tensor* zp =
      t->quant.zero_point.empty() ? nullptr : g.FindInitializer(t->quant.zero_point);
  RETURN_IF_ERROR(ir::ValidateQuantLayout(*t, scale, zp));
  return t;
}

void SetLayout(const ir::Tensor& w, ir::Node* n) {
  n->attributes["kind"] = ir::Attribute::String(std::string(ir::QuantKindName(w.quant.kind)));
  n->attributes["axis"] = ir::Attribute::Int(w.quant.axis);
  const bool blocks = w.quant.kind == ir::QuantKind::kGgmlBlocks;
  n->attributes["group_size"] = ir::Attribute::Int(
      ir::IsGroupWise(w.quant.kind) || blocks ? w.quant.group_size : 0);
  if (blocks) {
    n->attributes["block_type"] = ir::Attribute::Int(static_cast<int64_t>(w.quant.block_type));
  }
}

bool IsDefaultDomain(const ir::Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

// Rewrites `n` if it is a Gemm / MatMul over a quantized weight.
absl::StatusOr<bool> RewriteLinear(const ir::Graph& g, ir::Node& n) {
  const bool gemm = n.op_type == "Gemm";
  if (n.inputs.size() < 2 || n.inputs.size() > (gemm ? 3u : 2u) || n.outputs.size() != 1) {
    return false;
  }
  ASSIGN_OR_RETURN(const ir::Tensor* w, QuantizedMatrix(g, n.inputs[1]));
  if (w == nullptr) return false;
  int64_t trans_a = 0, trans_b = 0;
  std::string bias;
  if (gemm) {
    if (!IntOr(n, "transA", 0, &trans_a) || !IntOr(n, "transB", 0, &trans_b)) return false;
    if (trans_a != 0 || (trans_b != 0 && trans_b != 1)) return false;
    if (!FloatIs(n, "alpha", 1.0f) || !FloatIs(n, "beta", 1.0f)) return false;
    if (n.inputs.size() == 3 && !n.inputs[2].empty()) {
      // The kernel writes the bias row into every output row first (as the
      // Gemm kernel does for a [N] / [1, N] C); other shapes stay Gemm.
      const ir::Tensor* c = g.FindInitializer(n.inputs[2]);
      const int64_t out_n = w->dims[trans_b ? 0 : 1];
      if (c == nullptr || c->dtype != ir::DType::kF32 || c->quant.quantized()) return false;
      const bool row = (c->dims.size() == 1 && c->dims[0] == out_n) ||
                       (c->dims.size() == 2 && c->dims[0] == 1 && c->dims[1] == out_n);
      if (!row) return false;
      bias = n.inputs[2];
    }
  }
  const std::string a = n.inputs[0];
  n.inputs = {a, w->name, w->quant.scale, w->quant.zero_point, bias};
  while (n.inputs.back().empty()) n.inputs.pop_back();  // optional, omitted
  n.attributes.clear();
  n.attributes["trans_b"] = ir::Attribute::Int(trans_b);
  SetLayout(*w, &n);
  n.domain = runtime::kSlimpackDomain;
  n.op_type = runtime::kMatMulQOp;
  return true;
}

absl::StatusOr<bool> RewriteGather(const ir::Graph& g, ir::Node& n) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  int64_t axis = 0;
  if (!IntOr(n, "axis", 0, &axis) || (axis != 0 && axis != -2)) return false;
  ASSIGN_OR_RETURN(const ir::Tensor* t, QuantizedMatrix(g, n.inputs[0]));
  if (t == nullptr) return false;
  const std::string ids = n.inputs[1];
  n.inputs = {t->name, t->quant.scale, t->quant.zero_point, ids};
  n.attributes.clear();
  SetLayout(*t, &n);
  n.domain = runtime::kSlimpackDomain;
  n.op_type = runtime::kGatherQOp;
  return true;
}

}  // namespace

absl::StatusOr<int> UsePackedWeights(ir::Graph& graph) {
  int rewritten = 0;
  for (ir::Node& n : graph.nodes) {
    if (!IsDefaultDomain(n)) continue;
    absl::StatusOr<bool> done = false;
    if (n.op_type == "Gemm" || n.op_type == "MatMul") {
      done = RewriteLinear(graph, n);
    } else if (n.op_type == "Gather") {
      done = RewriteGather(graph, n);
    }
    if (!done.ok()) return Annotate(done.status(), "node '" + n.name + "' (" + n.op_type + ")");
    if (*done) ++rewritten;
  }
  return rewritten;
}

}  // namespace slimpack::passes
