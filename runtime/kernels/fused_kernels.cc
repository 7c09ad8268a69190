// Kernels for the slimpack-domain fused ops (see fused_kernels.h). Each one
// builds the node(s) it stands for and calls the built-in kernels.
#include "runtime/kernels/fused_kernels.h"

#include <cmath>
#include <string>

#include "runtime/allocator.h"
#include "runtime/kernel.h"
#include "runtime/kernels/byte_lookup.h"
#include "runtime/kernels/conv_f32.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/packed_kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime {
namespace {

using runtime::KernelContext;
using runtime::KernelFn;
using runtime::RtTensor;

// The inner nodes use current-opset semantics (Clip bounds, Gemm's
// optional C) regardless of the slimpack domain's version.
constexpr int64_t kInnerOpset = 17;

// Which of the outer node's caches an inner op may use.
enum class InnerCache { kNone, kOuters };

// Runs `fn` as `op_type` over `inputs` with `node`'s attributes minus
// `drop`, and returns output 0. With InnerCache::kOuters the inner op gets
// the outer node's cache and constant inputs, index for index: only for
// the one inner op of a fused node whose inputs are the outer's own (a
// Conv or Gemm keeping its packed constant weights).
absl::StatusOr<RtTensor> RunInner(const KernelContext& outer,
                                  const std::string& op_type, KernelFn fn,
                                  ir::Node node,
                                  std::vector<const RtTensor*> inputs,
                                  bool input0_is_scratch = false,
                                  InnerCache cache = InnerCache::kNone) {
  node.domain.clear();
  node.op_type = op_type;
  node.outputs = {node.outputs.empty() ? std::string("y") : node.outputs[0]};
  // The run's allocator: its limit bounds the intermediates, and they
  // reuse the run's idle buffers (a fresh allocator per fused node faulted
  // in new pages for each, which made a fused MobileNet-style graph slower
  // than the unfused one).
  KernelContext ctx(node, kInnerOpset, std::move(inputs), &outer.allocator(),
                    outer.pool(), nullptr);
  // An intermediate of the fused op: an elementwise kernel may write its
  // result over it.
  static const std::vector<bool> kInput0 = {true};
  if (input0_is_scratch) ctx.SetLastReaders(&kInput0);
  if (cache == InnerCache::kOuters) ctx.SetNodeCache(outer.node_cache(), outer.constant_inputs());
  RETURN_IF_ERROR(fn(ctx));
  if (!ctx.outputs()[0].defined()) {
    return absl::InternalError(op_type + " kernel produced no output for node '" +
                               node.name + "'");
  }
  return ctx.outputs()[0];
}

absl::StatusOr<KernelFn> ActivationKernel(const std::string& name) {
  if (name == "Relu") return runtime::kernels::Relu;
  if (name == "Clip") return runtime::kernels::Clip;
  if (name == "LeakyRelu") return runtime::kernels::LeakyRelu;
  if (name == "HardSwish") return runtime::kernels::HardSwish;
  if (name == "Sigmoid") return runtime::kernels::Sigmoid;
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

// `with_activation`, when given, names base_fn's variant that applies the
// activation itself as it stores its output (nullptr where it has none):
// that variant then runs alone, saving a pass over the output.
using WithActivationFn = KernelFn (*)(const std::string& activation);

absl::Status FusedWithActivation(KernelContext& ctx, const std::string& base_op,
                                 KernelFn base_fn, WithActivationFn with_activation = nullptr) {
  ASSIGN_OR_RETURN(ir::Node act_node, ActivationNode(ctx));
  ASSIGN_OR_RETURN(KernelFn act_fn, ActivationKernel(act_node.op_type));
  ir::Node base = ctx.node();
  base.attributes.erase("activation");
  base.attributes.erase("activation_params");
  std::vector<const RtTensor*> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i));
  const KernelFn inside = with_activation != nullptr ? with_activation(act_node.op_type) : nullptr;
  ASSIGN_OR_RETURN(RtTensor y, RunInner(ctx, base_op, inside != nullptr ? inside : base_fn,
                                        std::move(base), std::move(inputs), false,
                                        InnerCache::kOuters));
  if (inside != nullptr) {
    ctx.SetOutput(0, std::move(y));
    return absl::OkStatus();
  }
  // The activation may run in place over the convolution's or Gemm's
  // result while it is in cache (a fresh output buffer made it a stream of
  // cold stores); Recycle keeps a buffer z still holds.
  ASSIGN_OR_RETURN(RtTensor z, RunInner(ctx, act_node.op_type, act_fn,
                                        act_node, {&y}, /*input0_is_scratch=*/true));
  ctx.Recycle(std::move(y));
  ctx.SetOutput(0, std::move(z));
  return absl::OkStatus();
}

KernelFn ConvWithActivation(const std::string& activation) {
  if (activation == "Relu") return runtime::kernels::ConvRelu;
  if (activation == "HardSwish") return runtime::kernels::ConvHardSwish;
  return nullptr;
}

absl::Status FusedConv(KernelContext& ctx) {
  return FusedWithActivation(ctx, "Conv", runtime::kernels::Conv, ConvWithActivation);
}

absl::Status FusedGemm(KernelContext& ctx) {
  return FusedWithActivation(ctx, "Gemm", runtime::kernels::Gemm);
}

absl::Status SlimpackGelu(KernelContext& ctx) {
  std::vector<const RtTensor*> inputs = {ctx.input(0)};
  ASSIGN_OR_RETURN(RtTensor y, RunInner(ctx, "Gelu",
                                        runtime::kernels::Gelu, ctx.node(),
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
  ASSIGN_OR_RETURN(RtTensor y,
                   RunInner(ctx, "LayerNormalization",
                            runtime::kernels::LayerNormalization,
                            std::move(norm), std::move(inputs)));
  ir::Node gelu;
  gelu.name = ctx.node().name;
  gelu.inputs = {"x"};
  gelu.attributes["approximate"] = ir::Attribute::String(approximate);
  ASSIGN_OR_RETURN(RtTensor z, RunInner(ctx, "Gelu",
                                        runtime::kernels::Gelu, gelu, {&y}));
  ctx.SetOutput(0, std::move(z));
  return absl::OkStatus();
}

// Runs a default-domain binary op over two tensors.
absl::StatusOr<RtTensor> RunBinary(const KernelContext& outer,
                                   const std::string& op_type, KernelFn fn,
                                   const RtTensor& a, const RtTensor& b) {
  ir::Node node;
  node.name = outer.node().name;
  node.inputs = {"a", "b"};
  node.outputs = {"y"};
  return RunInner(outer, op_type, fn, std::move(node), {&a, &b});
}

// x / sqrt(mean(x*x over axes [axis, rank)) + epsilon) * scale, as the
// unfused Div-form chain computes it (same kernels, same order).
absl::Status RmsNorm(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* scale, ctx.RequiredInput(1));
  RETURN_IF_ERROR(ctx.ExpectDType(0, ir::DType::kF32));
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", -1));
  ASSIGN_OR_RETURN(float epsilon, ctx.FloatAttr("epsilon", 1e-5f));
  int64_t rank = static_cast<int64_t>(x->rank());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    return absl::InvalidArgumentError(
        "node '" + ctx.node().name + "': RMSNorm axis " + std::to_string(axis) +
        " is out of range for an input of rank " + std::to_string(rank));
  }
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  namespace k = runtime::kernels;
  ASSIGN_OR_RETURN(RtTensor sq, RunBinary(ctx, "Mul", k::Mul, *x, *x));
  ir::Node mean;
  mean.name = ctx.node().name;
  mean.inputs = {"x"};
  mean.attributes["axes"] = ir::Attribute::Ints(axes);
  mean.attributes["keepdims"] = ir::Attribute::Int(1);
  ASSIGN_OR_RETURN(RtTensor var, RunInner(ctx, "ReduceMean", k::ReduceMean,
                                          mean, {&sq}));
  RtTensor eps = RtTensor::FromVector<float>({}, {epsilon});
  ASSIGN_OR_RETURN(RtTensor ve, RunBinary(ctx, "Add", k::Add, var, eps));
  ir::Node sqrt_node;
  sqrt_node.name = ctx.node().name;
  sqrt_node.inputs = {"x"};
  ASSIGN_OR_RETURN(RtTensor s, RunInner(ctx, "Sqrt", k::Sqrt, sqrt_node, {&ve}));
  ASSIGN_OR_RETURN(RtTensor n, RunBinary(ctx, "Div", k::Div, *x, s));
  ASSIGN_OR_RETURN(RtTensor y, RunBinary(ctx, "Mul", k::Mul, n, *scale));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

// x * Sigmoid(x).
absl::Status SiLU(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ir::Node sig;
  sig.name = ctx.node().name;
  sig.inputs = {"x"};
  ASSIGN_OR_RETURN(RtTensor s, RunInner(ctx, "Sigmoid",
                                        runtime::kernels::Sigmoid, sig, {x}));
  ASSIGN_OR_RETURN(RtTensor y, RunBinary(ctx, "Mul",
                                         runtime::kernels::Mul, *x, s));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

// ONNX HardSwish (opset 14) for models whose opset predates it.
absl::Status SlimpackHardSwish(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(RtTensor y, RunInner(ctx, "HardSwish",
                                        runtime::kernels::HardSwish, ctx.node(), {x}));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

// softmax(Q Kt [/ scale_divisor | * scale] [+ mask]) V, axis -1, with the
// built-in kernels in the order the unfused graph ran them.
absl::Status Attention(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* q, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* kt, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(const RtTensor* v, ctx.RequiredInput(2));
  const RtTensor* mask = ctx.input(3);
  if (ctx.HasAttr("scale") && ctx.HasAttr("scale_divisor")) {
    return absl::InvalidArgumentError("node '" + ctx.node().name +
                                      "': Attention has both scale and scale_divisor");
  }
  namespace k = runtime::kernels;
  ASSIGN_OR_RETURN(RtTensor s, RunBinary(ctx, "MatMul", k::MatMul, *q, *kt));
  if (ctx.HasAttr("scale") || ctx.HasAttr("scale_divisor")) {
    bool divide = ctx.HasAttr("scale_divisor");
    ASSIGN_OR_RETURN(float c, ctx.FloatAttr(divide ? "scale_divisor" : "scale", 1.0f));
    RtTensor constant = RtTensor::FromVector<float>({}, {c});
    ASSIGN_OR_RETURN(s, divide ? RunBinary(ctx, "Div", k::Div, s, constant)
                               : RunBinary(ctx, "Mul", k::Mul, s, constant));
  }
  if (mask != nullptr && mask->defined()) {
    ASSIGN_OR_RETURN(s, RunBinary(ctx, "Add", k::Add, s, *mask));
  }
  ir::Node softmax;
  softmax.name = ctx.node().name;
  softmax.inputs = {"x"};
  softmax.attributes["axis"] = ir::Attribute::Int(-1);
  ASSIGN_OR_RETURN(RtTensor p, RunInner(ctx, "Softmax", k::Softmax, softmax, {&s}));
  ASSIGN_OR_RETURN(RtTensor y, RunBinary(ctx, "MatMul", k::MatMul, p, *v));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

// MatMul(A, W) + bias, for the batched linears Gemm cannot express.
absl::Status MatMulAdd(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* w, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(const RtTensor* bias, ctx.RequiredInput(2));
  ASSIGN_OR_RETURN(RtTensor m, RunBinary(ctx, "MatMul",
                                         runtime::kernels::MatMul, *a, *w));
  ASSIGN_OR_RETURN(RtTensor y, RunBinary(ctx, "Add",
                                         runtime::kernels::Add, m, *bias));
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

// table[byte of x] (runtime/quantized_lookup.h): x u8 or i8, table [256]
// of the output type, built by the plan rewrite from the chain it replaces.
absl::Status QuantizedLookup(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* table, ctx.RequiredInput(1));
  const auto is_byte = [](ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; };
  if (!is_byte(x->dtype()) || !is_byte(table->dtype()) || table->num_elements() != 256) {
    return absl::InvalidArgumentError(
        "QuantizedLookup takes a u8/i8 input and a [256] u8/i8 table, got " +
        std::string(ir::DTypeName(x->dtype())) + " and " + DimsToString(table->dims()) + " " +
        std::string(ir::DTypeName(table->dtype())));
  }
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(table->dtype(), x->dims()));
  const uint8_t* px = x->raw();
  const uint8_t* t = table->raw();
  uint8_t* py = y.mutable_data<uint8_t>();
  kernels::LookupBytes(t, px, x->num_elements(), py);
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterFusedKernels(runtime::KernelRegistry& registry) {
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "FusedConv", FusedConv));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "FusedGemm", FusedGemm));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "Gelu", SlimpackGelu));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "LayerNormGelu", LayerNormGelu));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "RMSNorm", RmsNorm));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "SiLU", SiLU));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "HardSwish", SlimpackHardSwish));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "Attention", Attention));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "MatMulAdd", MatMulAdd));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, "QuantizedLookup", QuantizedLookup));
  // Quantized weights run packed (passes/use_packed_weights.h).
  RETURN_IF_ERROR(RegisterPackedKernels(registry));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime
