#include "quantize/rtn_tensor.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/float_convert.h"
#include "quantize/weight_matrix.h"
#include "support/input_pages.h"
#include "support/status_macros.h"

namespace slimpack::quantize {
namespace {

absl::Status AnnotateTensor(const absl::Status& s, const ir::Tensor& t) {
  return Annotate(s, "tensor '" + t.name + "'");
}

void Append(std::vector<uint8_t>& out, const ir::TensorData& d) {
  out.insert(out.end(), d.data(), d.data() + d.size());
}

// A fold whose lengths do not match the [rows, cols] matrix, or one asked
// of a transposed tensor: InvalidArgument naming the tensor.
absl::Status CheckFold(const RtnTensorOptions& o, const ir::Tensor& t, int64_t rows,
                       int64_t cols) {
  if (!o.fold) return absl::OkStatus();
  const ValueFold& f = *o.fold;
  if (o.transposed || (!f.col_scale.empty() && static_cast<int64_t>(f.col_scale.size()) != cols) ||
      (!f.row_divisor.empty() && static_cast<int64_t>(f.row_divisor.size()) != rows)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", t.name, "': a fold of ", f.col_scale.size(), " column scales and ",
        f.row_divisor.size(), " row divisors for a ", rows, " x ", cols, " matrix",
        o.transposed ? " stored transposed" : ""));
  }
  return absl::OkStatus();
}

// The stored tensors of `q`, in `original`'s dims.
absl::StatusOr<quant::PackedTensors> PackStored(const quant::QuantizedMatrix& q,
                                                const ir::Tensor& original, bool transposed,
                                                const std::string& algorithm) {
  // Conv kernels are packed as their [O, I*kh*kw] matrix; the int8
  // per-channel layout (scale per output channel) holds for any rank, so
  // the original dims come back afterwards.
  ir::Tensor flat = original;
  if (flat.dims.size() > 2) flat.dims = {q.rows, q.cols};
  ASSIGN_OR_RETURN(quant::PackedTensors packed, quant::ToIrTensors(q, flat, transposed, algorithm));
  packed.weight.dims = original.dims;
  return packed;
}

// The whole matrix at once: transposed tensors and the inputs the blocked
// path would not refuse the same way (empty, non-float).
absl::StatusOr<QuantizedWeight> QuantizeWhole(const ir::Tensor& original, const RtnTensorOptions& o) {
  ASSIGN_OR_RETURN(Matrix m, AsMatrix(original, o.transposed));
  RETURN_IF_ERROR(CheckFold(o, original, m.rows, m.cols));
  if (o.fold) o.fold->Apply(m.w.data(), 0, m.rows, m.cols);
  auto q = quant::QuantizeRtn(m.w.data(), m.rows, m.cols, o.scheme, o.rtn);
  if (!q.ok()) return AnnotateTensor(q.status(), original);
  if (!o.measure_error) {
    QuantizedWeight out;
    ASSIGN_OR_RETURN(out.packed, PackStored(*q, original, o.transposed, o.algorithm));
    return out;
  }
  std::vector<float> deq(m.w.size());
  quant::Dequantize(*q, deq.data());
  return StoredWeight(*q, m.w, deq, original, o.transposed, o.algorithm);
}

}  // namespace

absl::StatusOr<std::pair<int64_t, int64_t>> MatrixShape(const ir::Tensor& t, bool transposed) {
  if (transposed) {
    if (t.dims.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", t.name, "': a transposed weight must have rank 2, has rank ", t.dims.size()));
    }
    return std::make_pair(t.dims[1], t.dims[0]);
  }
  if (t.dims.empty()) {
    return absl::InvalidArgumentError("tensor '" + t.name + "': a weight must have rank >= 1");
  }
  ASSIGN_OR_RETURN(uint64_t n, t.NumElements());
  const int64_t rows = t.dims[0];
  return std::make_pair(rows, rows == 0 ? int64_t{0} : static_cast<int64_t>(n) / rows);
}

absl::StatusOr<QuantizedWeight> StoredWeight(const quant::QuantizedMatrix& q,
                                             const std::vector<float>& w,
                                             const std::vector<float>& deq,
                                             const ir::Tensor& original, bool transposed,
                                             const std::string& algorithm) {
  QuantizedWeight out;
  out.error = quant::CompareArrays(w.data(), deq.data(), static_cast<int64_t>(w.size()));
  ASSIGN_OR_RETURN(out.packed, PackStored(q, original, transposed, algorithm));
  return out;
}

namespace {

// Weights whose dequantized values the error is measured on at once.
constexpr int64_t kErrorTileWeights = 8192;

// QuantizeRtnTensor, the packed weight gathered or (with `sink`) handed over
// block by block.
absl::StatusOr<QuantizedWeight> QuantizeBlocks(const ir::Tensor& original,
                                               const RtnTensorOptions& o, const WeightSink* sink) {
  ASSIGN_OR_RETURN(auto shape, MatrixShape(original, o.transposed));
  const auto [rows, cols] = shape;
  if (o.transposed || rows < 1 || cols < 1 || !ir::IsConvertibleFloat(original.dtype)) {
    ASSIGN_OR_RETURN(QuantizedWeight whole, QuantizeWhole(original, o));
    if (sink) {
      RETURN_IF_ERROR((*sink)(whole.packed.weight.data.data(), whole.packed.weight.data.size()));
      whole.packed.weight.data = ir::TensorData();
    }
    return whole;
  }
  // The shapes and their checks first: a bad tensor is refused before any
  // block is read.
  ASSIGN_OR_RETURN(quant::PackedTensors shapes,
                   quant::PackedShapes(o.scheme, rows, cols, original, false, o.algorithm));
  RETURN_IF_ERROR(CheckFold(o, original, rows, cols));
  // Even block heights keep every block's 4-bit codes and zero points on
  // whole bytes, so the blocks' packed bytes concatenate to the whole's.
  int64_t block = o.block_rows > 0 ? o.block_rows : kBlockWeights / cols;
  block = std::max<int64_t>(2, block - block % 2);
  const uint64_t element = ir::DTypeBits(original.dtype) / 8;
  std::vector<uint8_t> wbytes, sbytes, zbytes;
  uint64_t weight_bytes = 0;  // gathered in wbytes, or handed to the sink
  if (!sink) wbytes.reserve(shapes.weight.data.size());
  sbytes.reserve(shapes.scale.data.size());
  if (shapes.zero_point) zbytes.reserve(shapes.zero_point->data.size());
  QuantizedWeight out;
  quant::RtnOptions rtn = o.rtn;
  if (o.blocks_on_caller_thread) rtn.threads = 1;
  std::vector<float> deq;
  std::vector<uint8_t> raw;  // a block's source bytes, read through the file
  // One block's values and codes, their memory kept from block to block
  // (all blocks but the last have the same size).
  std::vector<float> w;
  quant::QuantizedMatrix q;
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t r = std::min(block, rows - r0);
    const uint64_t n = static_cast<uint64_t>(r * cols);
    ir::Tensor part;
    part.name = original.name;
    part.dtype = original.dtype;
    part.dims = {r, cols};
    // The caller's tensor (or `raw`) outlives this view.
    const uint8_t* source = original.data.data() + static_cast<uint64_t>(r0 * cols) * element;
    if (o.release) {
      raw.resize(n * element);
      o.release->Copy(source, n * element, raw.data());
      part.data = ir::TensorData::View(nullptr, raw.data(), n * element);
    } else {
      part.data = ir::TensorData::View(nullptr, source, n * element);
      support::PrefaultRead(part.data.data(), part.data.size());
    }
    w.resize(n);
    RETURN_IF_ERROR(AnnotateTensor(ir::ConvertFloats(part.dtype, part.data.data(), ir::DType::kF32,
                                                     reinterpret_cast<uint8_t*>(w.data()), n),
                                   original));
    if (o.release) o.release->Release(source, n * element);
    if (o.fold) o.fold->Apply(w.data(), r0, r, cols);
    if (absl::Status s = quant::QuantizeRtnInto(w.data(), r, cols, o.scheme, rtn, &q); !s.ok()) {
      return AnnotateTensor(s, original);
    }
    // The error a few rows at a time: their dequantized values stay in
    // cache (the sums run in the same order as over the whole block).
    if (o.measure_error) {
      const int64_t step = std::max<int64_t>(1, kErrorTileWeights / cols);
      deq.resize(static_cast<uint64_t>(std::min(step, r) * cols));
      for (int64_t i = 0; i < r; i += step) {
        const int64_t end = std::min(r, i + step);
        quant::DequantizeRows(q, i, end, deq.data());
        quant::AccumulateErrors(out.error, w.data() + i * cols, deq.data(), (end - i) * cols);
      }
    }
    ASSIGN_OR_RETURN(quant::PackedTensors p, quant::ToIrTensors(q, part, false, o.algorithm));
    weight_bytes += p.weight.data.size();
    if (sink) {
      RETURN_IF_ERROR((*sink)(p.weight.data.data(), p.weight.data.size()));
    } else {
      Append(wbytes, p.weight.data);
    }
    Append(sbytes, p.scale.data);
    if (p.zero_point) Append(zbytes, p.zero_point->data);
  }
  if (weight_bytes != shapes.weight.data.size() || sbytes.size() != shapes.scale.data.size() ||
      zbytes.size() != (shapes.zero_point ? shapes.zero_point->data.size() : 0)) {
    return absl::InternalError(absl::StrCat("tensor '", original.name, "': blocks packed ",
                                            weight_bytes, "+", sbytes.size(), "+", zbytes.size(),
                                            " bytes, the layout holds ",
                                            shapes.weight.data.size(), "+",
                                            shapes.scale.data.size()));
  }
  out.packed = std::move(shapes);
  out.packed.weight.data = sink ? ir::TensorData() : ir::TensorData::Owned(std::move(wbytes));
  out.packed.scale.data = ir::TensorData::Owned(std::move(sbytes));
  if (out.packed.zero_point) out.packed.zero_point->data = ir::TensorData::Owned(std::move(zbytes));
  return out;
}

}  // namespace

absl::StatusOr<QuantizedWeight> QuantizeRtnTensor(const ir::Tensor& original,
                                            const RtnTensorOptions& o) {
  return QuantizeBlocks(original, o, nullptr);
}

absl::StatusOr<QuantizedWeight> QuantizeRtnTensorStreamed(const ir::Tensor& original,
                                                          const RtnTensorOptions& o,
                                                          const WeightSink& sink) {
  return QuantizeBlocks(original, o, &sink);
}

}  // namespace slimpack::quantize
