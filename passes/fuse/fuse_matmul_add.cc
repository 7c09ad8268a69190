// fuse-matmul-add (see fuse_matmul_add.h).
#include "passes/fuse/fuse_matmul_add.h"

#include "runtime/kernels/fused_kernels.h"
#include "passes/graph_utils.h"

namespace slimpack::passes {
namespace {

// Empty when MatMul `mm` + bias `bias` can fuse, else why not. `gemm` is
// set when A is known to be 2-D (Gemm); otherwise the fusion is
// slimpack.MatMulAdd.
std::string WhyNot(const ir::Graph& graph, const ir::Node& mm,
                   const std::string& bias, bool batched, bool& gemm) {
  if (mm.inputs.size() != 2) return "MatMul does not have 2 inputs";
  std::optional<ir::ValueInfo> a = graph.FindValueInfo(mm.inputs[0]);
  gemm = a && a->shape.rank_known() && a->shape.rank() == 2;
  if (!gemm && !batched) {
    if (!a || !a->shape.rank_known()) return "rank of '" + mm.inputs[0] + "' is unknown";
    return "'" + mm.inputs[0] + "' has rank " + std::to_string(a->shape.rank()) +
           ", Gemm needs 2 (option batched=true emits slimpack.MatMulAdd)";
  }
  const ir::Tensor* w = FindConstant(graph, mm.inputs[1]);
  if (w == nullptr || w->dtype != ir::DType::kF32 || w->dims.size() != 2) {
    return "weight '" + mm.inputs[1] + "' is not a 2-D f32 constant";
  }
  const ir::Tensor* b = FindConstant(graph, bias);
  if (b == nullptr || b->dtype != ir::DType::kF32) {
    return "bias '" + bias + "' is not an f32 constant";
  }
  const int64_t n = w->dims[1];
  bool per_column = (b->dims.size() == 1 && b->dims[0] == n) ||
                    (b->dims.size() == 2 && b->dims[0] == 1 && b->dims[1] == n);
  bool scalar = b->dims.empty() || (b->dims.size() == 1 && b->dims[0] == 1);
  if (!per_column && !scalar) {
    return "bias '" + bias + "' has shape " +
           ir::Shape::FromDims(b->dims).ToString() + ", expected [" +
           std::to_string(n) + "] or [1," + std::to_string(n) + "]";
  }
  return "";
}

}  // namespace

absl::Status FuseMatMulAddPass::Run(ir::Graph& graph,
                                    PassContext& context) const {
  ir::UseDefIndex index = graph.BuildUseDefIndex();
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (dead[n]) continue;  // absorbed by an earlier match
    ir::Node& add = graph.nodes[n];
    if (!add.domain.empty() || add.op_type != "Add" || add.inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      std::optional<size_t> p = ProducerIndex(index, add.inputs[side]);
      if (!p || dead[*p] || graph.nodes[*p].op_type != "MatMul" ||
          !graph.nodes[*p].domain.empty()) {
        continue;
      }
      ir::Node& mm = graph.nodes[*p];
      const std::string& bias = add.inputs[1 - side];
      bool gemm = false;
      std::string why = HasSingleUse(graph, index, add.inputs[side])
                            ? WhyNot(graph, mm, bias, options_.batched, gemm)
                            : "MatMul output has other readers";
      if (!why.empty()) {
        context.Log(Describe(add) + ": not fused with " + Describe(mm) + ", " + why);
        break;
      }
      context.stats().nodes_matched++;
      context.stats().bytes_saved += StaticByteSize(graph, mm.outputs[0]);
      graph.value_info.erase(mm.outputs[0]);
      // The Gemm takes the Add's place: every input is defined before the
      // MatMul, and readers of the Add's output come after it.
      ir::Node fused;
      fused.name = mm.name;
      if (gemm) {
        fused.op_type = "Gemm";
      } else {
        fused.domain = runtime::kSlimpackDomain;
        fused.op_type = "MatMulAdd";
      }
      fused.inputs = {mm.inputs[0], mm.inputs[1], bias};
      fused.outputs = {add.outputs[0]};
      fused.provenance = ir::Provenance::Merge(mm.provenance, add.provenance);
      dead[*p] = true;
      add = std::move(fused);
      context.stats().nodes_rewritten++;
      break;
    }
  }
  int64_t removed = EraseNodes(graph, dead);
  context.stats().nodes_removed += removed;
  if (removed > 0) context.MarkChanged();
  return absl::OkStatus();
}

}  // namespace slimpack::passes
