// 2:4 semi-structured sparsity in bytes: the packed storage layout of
// formats/shard/spec.md section 5 ("sparse_2_4"), its inverse, and the zero
// count a sparsity record reports. Byte-level, so f32/f16/bf16 all work.
#ifndef SLIMPACK_IR_SPARSE_H_
#define SLIMPACK_IR_SPARSE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace slimpack::ir {

// "unstructured", "2:4"; "none" for kNone.
std::string_view SparsityPatternName(SparsityPattern p);
// InvalidArgument listing the choices for an unknown name.
absl::StatusOr<SparsityPattern> ParseSparsityPattern(std::string_view name);

// The rows x cols view a sparsity pattern works on: axis 1 (rank >= 2):
// rows = dims[0], cols = numel / dims[0], row-major; axis 0 (rank 2 only):
// rows = dims[1], cols = dims[0] (a transposed [in, out] weight: element
// (r, c) of the view is stored at c * dims[1] + r). InvalidArgument naming
// the tensor otherwise.
struct SparseView {
  int64_t rows = 0;
  int64_t cols = 0;
  bool transposed = false;  // axis 0
  // Flat storage index of view element (r, c).
  int64_t At(int64_t r, int64_t c) const {
    return transposed ? c * rows + r : r * cols + c;
  }
};
absl::StatusOr<SparseView> SparsityView(const Tensor& t, int axis);

// Name of the u4 index tensor that goes with packed tensor `name`.
std::string SparseIndicesName(const std::string& name);

// Packs a dense f32/f16/bf16 tensor whose view (axis 1) has at most two
// nonzeros in every group of 4 consecutive columns. Returns the values
// tensor (t's name, dtype, role, layer, provenance and sparsity; dims as t
// but its bytes are the kept values, rows x cols/2, in row-major order) and
// the index tensor (u4, dims [rows, cols / 4], one nibble per group:
// bits 0-1 the position of the first kept value, bits 2-3 of the second,
// first < second; element 2k in the low nibble of byte k). A group with
// fewer than two nonzeros keeps the lowest-positioned zeros to make up two.
// InvalidArgument naming the tensor for a non-float dtype, a quantized
// tensor, cols not a multiple of 4, or a group with three or more nonzeros
// (naming the row and group).
struct Packed2of4 {
  Tensor values;
  Tensor indices;
};
absl::StatusOr<Packed2of4> Pack2of4(const Tensor& dense);
// Pack2of4's two tensors without their bytes (TensorData::Deferred of the
// sizes Pack2of4 fills), for a dense tensor whose bytes are not made yet;
// the same refusals except the data size and group checks.
absl::StatusOr<Packed2of4> Pack2of4Layout(const Tensor& dense);

// The inverse of Pack2of4 into `out` (numel * element bytes, zero-filled
// here). InvalidArgument naming `name` when a nibble's positions are not
// increasing or sizes disagree.
absl::Status Unpack2of4(const std::string& name, DType dtype, int64_t rows,
                        int64_t cols, const uint8_t* values,
                        uint64_t values_size, const uint8_t* indices,
                        uint64_t indices_size, uint8_t* out, uint64_t out_size);

// What a sparsity record states about a dense-stored tensor: elements whose
// stored value is exactly zero (floats: +0 and -0; symmetric quantized
// integers: q == 0, which is x == 0 exactly since zero point is 0) and
// whether every group of 4 of the view has at most 2 nonzeros.
struct SparsityMeasure {
  uint64_t zeros = 0;
  uint64_t numel = 0;
  bool holds_2of4 = false;  // false when cols % 4 != 0
};
// InvalidArgument naming the tensor for a dtype other than f32/f16/bf16,
// i8, i4, or an asymmetric quantized tensor (its zeros are q == zp, which
// this count does not see).
absl::StatusOr<SparsityMeasure> MeasureSparsity(const Tensor& t);

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_SPARSE_H_
