// Every built-in kernel function; kernel_registry.cc lists them in one
// table. Each takes the node's context and sets its outputs.
#ifndef SLIMPACK_RUNTIME_KERNELS_KERNELS_H_
#define SLIMPACK_RUNTIME_KERNELS_KERNELS_H_

#include "absl/status/status.h"
#include "runtime/kernel.h"

namespace slimpack::runtime::kernels {

// elementwise.cc
absl::Status Add(KernelContext& ctx);
absl::Status Sub(KernelContext& ctx);
absl::Status Mul(KernelContext& ctx);
absl::Status Div(KernelContext& ctx);
absl::Status Pow(KernelContext& ctx);
absl::Status Max(KernelContext& ctx);
absl::Status Min(KernelContext& ctx);
absl::Status Sum(KernelContext& ctx);
absl::Status Mean(KernelContext& ctx);
absl::Status Equal(KernelContext& ctx);
absl::Status Less(KernelContext& ctx);
absl::Status Greater(KernelContext& ctx);
absl::Status LessOrEqual(KernelContext& ctx);
absl::Status GreaterOrEqual(KernelContext& ctx);
absl::Status And(KernelContext& ctx);
absl::Status Or(KernelContext& ctx);
absl::Status Xor(KernelContext& ctx);
absl::Status Not(KernelContext& ctx);
absl::Status Where(KernelContext& ctx);
absl::Status BitShift(KernelContext& ctx);
// elementwise_unary.cc
absl::Status Neg(KernelContext& ctx);
absl::Status Abs(KernelContext& ctx);
absl::Status Sqrt(KernelContext& ctx);
absl::Status Exp(KernelContext& ctx);
absl::Status Log(KernelContext& ctx);
absl::Status Reciprocal(KernelContext& ctx);
absl::Status Floor(KernelContext& ctx);
absl::Status Ceil(KernelContext& ctx);
absl::Status Sin(KernelContext& ctx);
absl::Status Cos(KernelContext& ctx);
absl::Status Erf(KernelContext& ctx);
absl::Status Tanh(KernelContext& ctx);
absl::Status Sigmoid(KernelContext& ctx);
absl::Status Relu(KernelContext& ctx);
absl::Status Softplus(KernelContext& ctx);
absl::Status LeakyRelu(KernelContext& ctx);
absl::Status Elu(KernelContext& ctx);
absl::Status HardSigmoid(KernelContext& ctx);
// y[i] = HardSwish(x[i]) for i < n with the HardSwish kernel's bits (x and
// y may be one buffer): what a convolution's fused HardSwish falls back to.
void HardSwishArray(const float* x, float* y, int64_t n);
absl::Status HardSwish(KernelContext& ctx);
absl::Status Gelu(KernelContext& ctx);
absl::Status Clip(KernelContext& ctx);

// unary_math.cc
absl::Status Round(KernelContext& ctx);
absl::Status Sign(KernelContext& ctx);
absl::Status Tan(KernelContext& ctx);
absl::Status Asin(KernelContext& ctx);
absl::Status Acos(KernelContext& ctx);
absl::Status Atan(KernelContext& ctx);
absl::Status Sinh(KernelContext& ctx);
absl::Status Cosh(KernelContext& ctx);
absl::Status Asinh(KernelContext& ctx);
absl::Status Acosh(KernelContext& ctx);
absl::Status Atanh(KernelContext& ctx);
absl::Status Softsign(KernelContext& ctx);
absl::Status Selu(KernelContext& ctx);
absl::Status Celu(KernelContext& ctx);
absl::Status ThresholdedRelu(KernelContext& ctx);
absl::Status Shrink(KernelContext& ctx);
absl::Status IsNaN(KernelContext& ctx);
absl::Status IsInf(KernelContext& ctx);
absl::Status PRelu(KernelContext& ctx);
absl::Status Mod(KernelContext& ctx);

// matmul.cc
absl::Status MatMul(KernelContext& ctx);
absl::Status Gemm(KernelContext& ctx);

// einsum.cc
absl::Status Einsum(KernelContext& ctx);

// conv.cc
absl::Status Conv(KernelContext& ctx);
absl::Status ConvTranspose(KernelContext& ctx);

// pool.cc
absl::Status MaxPool(KernelContext& ctx);
absl::Status AveragePool(KernelContext& ctx);
absl::Status GlobalAveragePool(KernelContext& ctx);
absl::Status GlobalMaxPool(KernelContext& ctx);

// normalization.cc
absl::Status BatchNormalization(KernelContext& ctx);
absl::Status InstanceNormalization(KernelContext& ctx);
absl::Status LayerNormalization(KernelContext& ctx);
absl::Status Softmax(KernelContext& ctx);
absl::Status LogSoftmax(KernelContext& ctx);
absl::Status Hardmax(KernelContext& ctx);

// loss.cc
absl::Status NegativeLogLikelihoodLoss(KernelContext& ctx);
absl::Status SoftmaxCrossEntropyLoss(KernelContext& ctx);

// reduce.cc
absl::Status ReduceSum(KernelContext& ctx);
absl::Status ReduceMean(KernelContext& ctx);
absl::Status ReduceMax(KernelContext& ctx);
absl::Status ReduceMin(KernelContext& ctx);
absl::Status ReduceProd(KernelContext& ctx);
absl::Status ReduceSumSquare(KernelContext& ctx);
absl::Status ReduceL1(KernelContext& ctx);
absl::Status ReduceL2(KernelContext& ctx);
absl::Status ReduceLogSum(KernelContext& ctx);
absl::Status ReduceLogSumExp(KernelContext& ctx);
absl::Status ArgMax(KernelContext& ctx);
absl::Status ArgMin(KernelContext& ctx);
absl::Status CumSum(KernelContext& ctx);
absl::Status TopK(KernelContext& ctx);

// shape_ops.cc
absl::Status Identity(KernelContext& ctx);
absl::Status Dropout(KernelContext& ctx);
absl::Status Reshape(KernelContext& ctx);
absl::Status Flatten(KernelContext& ctx);
absl::Status Squeeze(KernelContext& ctx);
absl::Status Unsqueeze(KernelContext& ctx);
absl::Status Shape(KernelContext& ctx);
absl::Status Size(KernelContext& ctx);
absl::Status Expand(KernelContext& ctx);
absl::Status Tile(KernelContext& ctx);
absl::Status Transpose(KernelContext& ctx);

// data_movement.cc
absl::Status Concat(KernelContext& ctx);
absl::Status Split(KernelContext& ctx);
absl::Status Slice(KernelContext& ctx);
absl::Status Gather(KernelContext& ctx);
absl::Status Pad(KernelContext& ctx);

// index_ops.cc
absl::Status GatherElements(KernelContext& ctx);
absl::Status Trilu(KernelContext& ctx);
absl::Status DepthToSpace(KernelContext& ctx);
absl::Status SpaceToDepth(KernelContext& ctx);

// scatter_gather.cc
absl::Status GatherND(KernelContext& ctx);
absl::Status ScatterND(KernelContext& ctx);
absl::Status ScatterElements(KernelContext& ctx);
absl::Status Scatter(KernelContext& ctx);
absl::Status Compress(KernelContext& ctx);

// unique.cc
absl::Status Unique(KernelContext& ctx);

// generate.cc
absl::Status Cast(KernelContext& ctx);
absl::Status CastLike(KernelContext& ctx);
absl::Status Constant(KernelContext& ctx);
absl::Status ConstantOfShape(KernelContext& ctx);
absl::Status Range(KernelContext& ctx);
absl::Status EyeLike(KernelContext& ctx);
absl::Status OneHot(KernelContext& ctx);

// resize.cc
absl::Status Resize(KernelContext& ctx);
absl::Status Upsample(KernelContext& ctx);

// rnn.cc
absl::Status LSTM(KernelContext& ctx);
absl::Status GRU(KernelContext& ctx);

// control_flow.cc
absl::Status If(KernelContext& ctx);

// quantize_linear.cc
absl::Status QuantizeLinear(KernelContext& ctx);
absl::Status DequantizeLinear(KernelContext& ctx);
absl::Status DynamicQuantizeLinear(KernelContext& ctx);
absl::Status MatMulInteger(KernelContext& ctx);
absl::Status QLinearMatMul(KernelContext& ctx);
// quantized_conv.cc
absl::Status ConvInteger(KernelContext& ctx);
absl::Status QLinearConv(KernelContext& ctx);

}  // namespace slimpack::runtime::kernels

#endif  // SLIMPACK_RUNTIME_KERNELS_KERNELS_H_
