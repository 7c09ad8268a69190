// Float weights as the quantizers see them: a row-major [rows = output
// channels, cols = input features] f32 matrix, converted from and back to
// the tensor's own dtype and orientation.
#ifndef SLIMPACK_QUANTIZE_WEIGHT_MATRIX_H_
#define SLIMPACK_QUANTIZE_WEIGHT_MATRIX_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::quantize {

struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> w;
};

// f32 copy of an f32/f16/bf16 tensor; Unimplemented naming the tensor for
// another dtype.
absl::StatusOr<std::vector<float>> ToF32(const ir::Tensor& t);
// `transposed`: the tensor is [cols, rows] (ONNX MatMul B). Otherwise dim 0
// is rows and the remaining dims are flattened into cols (Conv kernels).
absl::StatusOr<Matrix> AsMatrix(const ir::Tensor& t, bool transposed);
// A [rows, cols] matrix's values in the tensor's orientation.
std::vector<float> InTensorOrder(std::vector<float> w, int64_t rows, int64_t cols,
                                 bool transposed);
// `like` with f32 `values` (owned) and no quantization layout.
ir::Tensor F32Like(const ir::Tensor& like, const std::vector<float>& values);
// Swaps the initializer named t.name for `t` (Internal if absent).
absl::Status ReplaceInitializer(ir::Graph& g, ir::Tensor t);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_WEIGHT_MATRIX_H_
