// Kernels for the slimpack-domain fused ops (see fused_kernels.h). Each one
// builds the node(s) it stands for and calls the built-in kernels.
#include "passes/fused_kernels.h"

#include <cmath>
#include <string>

#include "calibration/allocator.h"
#include "calibration/kernel.h"
#include "calibration/kernels/kernels.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

using calibration::KernelContext;
using calibration::KernelFn;
using calibration::RtTensor;

// The inner nodes use current-opset semantics (Clip bounds, Gemm's
// optional C) regardless of the slimpack domain's version.
constexpr int64_t kInnerOpset = 17;
// Scratch tensors of the inner kernels; the interpreter has already
// bounded the outer node's inputs, this only guards the intermediate.
constexpr uint64_t kInnerMaxBytes = uint64_t{8} << 30;

// Runs `fn` as `op_type` over `inputs` with `node`'s attributes minus
// `drop`, and returns output 0.
absl::StatusOr<RtTensor> RunInner(const KernelContext& outer,
                                  calibration::TensorAllocator& allocator,
                                  const std::string& op_type, KernelFn fn,
                                  ir::Node node,
                                  std::vector<const RtTensor*> inputs) {
  node.domain.clear();
  node.op_type = op_type;
  node.outputs = {node.outputs.empty() ? std::string("y") : node.outputs[0]};
  KernelContext ctx(node, kInnerOpset, std::move(inputs), &allocator,
                    outer.pool(), nullptr);
  RETURN_IF_ERROR(fn(ctx));
  if (!ctx.outputs()[0].defined()) {
    return absl::InternalError(op_type + " kernel produced no output for node '" +
                               node.name + "'");
  }
  return ctx.outputs()[0];
}

absl::StatusOr<KernelFn> ActivationKernel(const std::string& name) {
  if (name == "Relu") return calibration::kernels::Relu;
  if (name == "Clip") return calibration::kernels::Clip;
  if (name == "LeakyRelu") return calibration::kernels::LeakyRelu;
  if (name == "HardSwish") return calibration::kernels::HardSwish;
  if (name == "Sigmoid") return calibration::kernels::Sigmoid;
  return absl::UnimplementedError(
      "activation '" + name +
      "' is not supported; supported: Clip, HardSwish, LeakyRelu, Relu, Sigmoid");
}

// The activation node described by `activation` / `activation_params`.
absl::StatusOr<ir::Node> ActivationNode(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(std::string act, ctx.StringAttr("activation", ""));
  ASSIGN_OR_RETURN(std::vector<float> params, ctx.FloatsAttr("activation_params"));
  ir::Node node;
  node.name = ctx.node().name;
  node.op_type = act;
  node.inputs = {"x"};
  node.outputs = {"y"};
  size_t want = act == "Clip" ? 2 : act == "LeakyRelu" ? 1 : 0;
  if (params.size() != want) {
    return absl::InvalidArgumentError(
        "node '" + ctx.node().name + "': activation " + act + " expects " +
        std::to_string(want) + " activation_params, found " +
        std::to_string(params.size()));
  }
  if (act == "Clip") {
    node.attributes["min"] = ir::Attribute::Float(params[0]);
    node.attributes["max"] = ir::Attribute::Float(params[1]);
  }
  if (act == "LeakyRelu") node.attributes["alpha"] = ir::Attribute::Float(params[0]);
  return node;
}

absl::Status FusedWithActivation(KernelContext& ctx, const std::string& base_op,
                                 KernelFn base_fn) {
  ASSIGN_OR_RETURN(ir::Node act_node, ActivationNode(ctx));
  ASSIGN_OR_RETURN(KernelFn act_fn, ActivationKernel(act_node.op_type));
  ir::Node base = ctx.node();
  base.attributes.erase("activation");
  base.attributes.erase("activation_params");
  std::vector<const RtTensor*> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i));
  calibration::TensorAllocator allocator(kInnerMaxBytes);
  ASSIGN_OR_RETURN(RtTensor y, RunInner(ctx, allocator, base_op, base_fn,
                                        std::move(base), std::move(inputs)));
  ASSIGN_OR_RETURN(RtTensor z, RunInner(ctx, allocator, act_node.op_type, act_fn,
                                        act_node, {&y}));
  ctx.SetOutput(0, std::move(z));
  return absl::OkStatus();
}

absl::Status FusedConv(KernelContext& ctx) {
  return FusedWithActivation(ctx, "Conv", calibration::kernels::Conv);
}

absl::Status FusedGemm(KernelContext& ctx) {
  return FusedWithActivation(ctx, "Gemm", calibration::kernels::Gemm);
}

absl::Status SlimpackGelu(KernelContext& ctx) {
  std::vector<const RtTensor*> inputs = {ctx.input(0)};
  calibration::TensorAllocator allocator(kInnerMaxBytes);
  ASSIGN_OR_RETURN(RtTensor y, RunInner(ctx, allocator, "Gelu",
                                        calibration::kernels::Gelu, ctx.node(),
                                        std::move(inputs)));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

absl::Status LayerNormGelu(KernelContext& ctx) {
  ASSIGN_OR_RETURN(std::string approximate, ctx.StringAttr("approximate", "none"));
  ir::Node norm = ctx.node();
  norm.attributes.erase("approximate");
  std::vector<const RtTensor*> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i));
  calibration::TensorAllocator allocator(kInnerMaxBytes);
  ASSIGN_OR_RETURN(RtTensor y,
                   RunInner(ctx, allocator, "LayerNormalization",
                            calibration::kernels::LayerNormalization,
                            std::move(norm), std::move(inputs)));
  ir::Node gelu;
  gelu.name = ctx.node().name;
  gelu.inputs = {"x"};
  gelu.attributes["approximate"] = ir::Attribute::String(approximate);
  ASSIGN_OR_RETURN(RtTensor z, RunInner(ctx, allocator, "Gelu",
                                        calibration::kernels::Gelu, gelu, {&y}));
  ctx.SetOutput(0, std::move(z));
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterFusedKernels(calibration::KernelRegistry& registry) {
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "FusedConv", FusedConv));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "FusedGemm", FusedGemm));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "Gelu", SlimpackGelu));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "LayerNormGelu", LayerNormGelu));
  return absl::OkStatus();
}

std::shared_ptr<const calibration::KernelRegistry> KernelsWithFusedOps() {
  auto registry = std::make_shared<calibration::KernelRegistry>(
      calibration::BuiltinKernels());
  // The built-in table has no slimpack-domain ops, so this cannot collide.
  RegisterFusedKernels(*registry).IgnoreError();
  return registry;
}

}  // namespace slimpack::passes
