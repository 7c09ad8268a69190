#include "runtime/kernel_registry.h"

#include "runtime/kernels/fused_kernels.h"
#include "runtime/kernels/kernels.h"

namespace slimpack::runtime {
namespace {

std::string NormalizeDomain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

}  // namespace

absl::Status KernelRegistry::Register(const std::string& domain,
                                      const std::string& op_type, KernelFn fn) {
  auto key = std::make_pair(NormalizeDomain(domain), op_type);
  if (!kernels_.emplace(key, fn).second) {
    return absl::AlreadyExistsError("a kernel for " +
                                    (key.first.empty() ? "" : key.first + ":") +
                                    op_type + " is already registered");
  }
  return absl::OkStatus();
}

KernelFn KernelRegistry::Find(const std::string& domain,
                              const std::string& op_type) const {
  auto it = kernels_.find(std::make_pair(NormalizeDomain(domain), op_type));
  return it == kernels_.end() ? nullptr : it->second;
}

std::vector<std::string> KernelRegistry::SupportedOps() const {
  std::vector<std::string> ops;
  for (const auto& [key, fn] : kernels_) {
    ops.push_back(key.first.empty() ? key.second : key.first + ":" + key.second);
  }
  return ops;
}

KernelRegistry BuiltinKernels() {
  // The one table of built-in kernels, all in the default ONNX domain.
  struct Entry {
    const char* op_type;
    KernelFn fn;
  };
  static constexpr Entry kTable[] = {
      {"Add", kernels::Add},
      {"Sub", kernels::Sub},
      {"Mul", kernels::Mul},
      {"Div", kernels::Div},
      {"Pow", kernels::Pow},
      {"Max", kernels::Max},
      {"Min", kernels::Min},
      {"Sum", kernels::Sum},
      {"Mean", kernels::Mean},
      {"Equal", kernels::Equal},
      {"Less", kernels::Less},
      {"Greater", kernels::Greater},
      {"LessOrEqual", kernels::LessOrEqual},
      {"GreaterOrEqual", kernels::GreaterOrEqual},
      {"And", kernels::And},
      {"Or", kernels::Or},
      {"Xor", kernels::Xor},
      {"Not", kernels::Not},
      {"Where", kernels::Where},
      {"BitShift", kernels::BitShift},
      {"Neg", kernels::Neg},
      {"Abs", kernels::Abs},
      {"Sqrt", kernels::Sqrt},
      {"Exp", kernels::Exp},
      {"Log", kernels::Log},
      {"Reciprocal", kernels::Reciprocal},
      {"Floor", kernels::Floor},
      {"Ceil", kernels::Ceil},
      {"Sin", kernels::Sin},
      {"Cos", kernels::Cos},
      {"Erf", kernels::Erf},
      {"Tanh", kernels::Tanh},
      {"Sigmoid", kernels::Sigmoid},
      {"Relu", kernels::Relu},
      {"Softplus", kernels::Softplus},
      {"LeakyRelu", kernels::LeakyRelu},
      {"Elu", kernels::Elu},
      {"HardSigmoid", kernels::HardSigmoid},
      {"HardSwish", kernels::HardSwish},
      {"Gelu", kernels::Gelu},
      {"Clip", kernels::Clip},
      {"Round", kernels::Round},
      {"Sign", kernels::Sign},
      {"Tan", kernels::Tan},
      {"Asin", kernels::Asin},
      {"Acos", kernels::Acos},
      {"Atan", kernels::Atan},
      {"Sinh", kernels::Sinh},
      {"Cosh", kernels::Cosh},
      {"Asinh", kernels::Asinh},
      {"Acosh", kernels::Acosh},
      {"Atanh", kernels::Atanh},
      {"Softsign", kernels::Softsign},
      {"Selu", kernels::Selu},
      {"Celu", kernels::Celu},
      {"ThresholdedRelu", kernels::ThresholdedRelu},
      {"Shrink", kernels::Shrink},
      {"IsNaN", kernels::IsNaN},
      {"IsInf", kernels::IsInf},
      {"PRelu", kernels::PRelu},
      {"Mod", kernels::Mod},
      {"MatMul", kernels::MatMul},
      {"Gemm", kernels::Gemm},
      {"Einsum", kernels::Einsum},
      {"Conv", kernels::Conv},
      {"ConvTranspose", kernels::ConvTranspose},
      {"MaxPool", kernels::MaxPool},
      {"AveragePool", kernels::AveragePool},
      {"GlobalAveragePool", kernels::GlobalAveragePool},
      {"GlobalMaxPool", kernels::GlobalMaxPool},
      {"BatchNormalization", kernels::BatchNormalization},
      {"InstanceNormalization", kernels::InstanceNormalization},
      {"LayerNormalization", kernels::LayerNormalization},
      {"Softmax", kernels::Softmax},
      {"LogSoftmax", kernels::LogSoftmax},
      {"Hardmax", kernels::Hardmax},
      {"NegativeLogLikelihoodLoss", kernels::NegativeLogLikelihoodLoss},
      {"SoftmaxCrossEntropyLoss", kernels::SoftmaxCrossEntropyLoss},
      {"ReduceSum", kernels::ReduceSum},
      {"ReduceMean", kernels::ReduceMean},
      {"ReduceMax", kernels::ReduceMax},
      {"ReduceMin", kernels::ReduceMin},
      {"ReduceProd", kernels::ReduceProd},
      {"ReduceSumSquare", kernels::ReduceSumSquare},
      {"ReduceL1", kernels::ReduceL1},
      {"ReduceL2", kernels::ReduceL2},
      {"ReduceLogSum", kernels::ReduceLogSum},
      {"ReduceLogSumExp", kernels::ReduceLogSumExp},
      {"ArgMax", kernels::ArgMax},
      {"ArgMin", kernels::ArgMin},
      {"CumSum", kernels::CumSum},
      {"TopK", kernels::TopK},
      {"Identity", kernels::Identity},
      {"Dropout", kernels::Dropout},
      {"Reshape", kernels::Reshape},
      {"Flatten", kernels::Flatten},
      {"Squeeze", kernels::Squeeze},
      {"Unsqueeze", kernels::Unsqueeze},
      {"Shape", kernels::Shape},
      {"Size", kernels::Size},
      {"Expand", kernels::Expand},
      {"Tile", kernels::Tile},
      {"Transpose", kernels::Transpose},
      {"Concat", kernels::Concat},
      {"Split", kernels::Split},
      {"Slice", kernels::Slice},
      {"Gather", kernels::Gather},
      {"Pad", kernels::Pad},
      {"GatherElements", kernels::GatherElements},
      {"Trilu", kernels::Trilu},
      {"DepthToSpace", kernels::DepthToSpace},
      {"SpaceToDepth", kernels::SpaceToDepth},
      {"GatherND", kernels::GatherND},
      {"ScatterND", kernels::ScatterND},
      {"ScatterElements", kernels::ScatterElements},
      {"Scatter", kernels::Scatter},
      {"Compress", kernels::Compress},
      {"Unique", kernels::Unique},
      {"Cast", kernels::Cast},
      {"CastLike", kernels::CastLike},
      {"Constant", kernels::Constant},
      {"ConstantOfShape", kernels::ConstantOfShape},
      {"Range", kernels::Range},
      {"EyeLike", kernels::EyeLike},
      {"OneHot", kernels::OneHot},
      {"Resize", kernels::Resize},
      {"Upsample", kernels::Upsample},
      {"LSTM", kernels::LSTM},
      {"GRU", kernels::GRU},
      {"If", kernels::If},
      {"QuantizeLinear", kernels::QuantizeLinear},
      {"DequantizeLinear", kernels::DequantizeLinear},
      {"DynamicQuantizeLinear", kernels::DynamicQuantizeLinear},
      {"MatMulInteger", kernels::MatMulInteger},
      {"ConvInteger", kernels::ConvInteger},
      {"QLinearMatMul", kernels::QLinearMatMul},
      {"QLinearConv", kernels::QLinearConv},
  };
  KernelRegistry registry;
  for (const Entry& e : kTable) {
    // Names in the table are unique, so this cannot fail.
    registry.Register("", e.op_type, e.fn).IgnoreError();
  }
  // The slimpack-domain ops our passes emit (fused and packed-weight ops):
  // an artifact that holds them runs with the default registry, whichever
  // command reads it. The table above has no slimpack-domain op, so this
  // cannot collide.
  RegisterFusedKernels(registry).IgnoreError();
  return registry;
}

}  // namespace slimpack::runtime
