#include "quantize/weight_matrix.h"

#include <cstring>

#include "ir/float_convert.h"
#include "support/status_macros.h"

namespace slimpack::quantize {

absl::StatusOr<std::vector<float>> ToF32(const ir::Tensor& t) {
  ASSIGN_OR_RETURN(uint64_t n, t.NumElements());
  std::vector<float> out(n);
  if (n == 0) return out;
  RETURN_IF_ERROR(Annotate(
      ir::ConvertFloats(t.dtype, t.data.data(), ir::DType::kF32,
                               reinterpret_cast<uint8_t*>(out.data()), n),
      "tensor '" + t.name + "'"));
  return out;
}

absl::StatusOr<Matrix> AsMatrix(const ir::Tensor& t, bool transposed) {
  ASSIGN_OR_RETURN(std::vector<float> v, ToF32(t));
  Matrix m;
  if (transposed) {
    m.rows = t.dims[1];
    m.cols = t.dims[0];
    m.w.resize(v.size());
    for (int64_t k = 0; k < m.cols; ++k) {
      for (int64_t r = 0; r < m.rows; ++r) m.w[r * m.cols + k] = v[k * m.rows + r];
    }
  } else {
    m.rows = t.dims[0];
    m.cols = m.rows == 0 ? 0 : static_cast<int64_t>(v.size()) / m.rows;
    m.w = std::move(v);
  }
  return m;
}

// Values of a [rows, cols] matrix in the tensor's own orientation.
std::vector<float> InTensorOrder(std::vector<float> w, int64_t rows, int64_t cols,
                                 bool transposed) {
  if (!transposed) return w;
  std::vector<float> out(w.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < cols; ++k) out[k * rows + r] = w[r * cols + k];
  }
  return out;
}

ir::Tensor F32Like(const ir::Tensor& like, const std::vector<float>& values) {
  ir::Tensor t = like;
  t.dtype = ir::DType::kF32;
  t.quant = ir::QuantLayout{};
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

absl::Status ReplaceInitializer(ir::Graph& g, ir::Tensor t) {
  if (!g.RemoveInitializer(t.name)) {
    return absl::InternalError("no initializer '" + t.name + "' to replace");
  }
  return g.AddInitializer(std::move(t));
}

}  // namespace slimpack::quantize
