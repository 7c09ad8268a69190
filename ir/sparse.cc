// 2:4 packing, unpacking and zero counting (ir/sparse.h).
#include "ir/sparse.h"

#include <cstring>
#include <utility>

#include "ir/shape.h"
#include "support/status_macros.h"

namespace slimpack::ir {
namespace {

bool IsPackableFloat(DType d) {
  return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16;
}

// Bytes per element of a float dtype (2 or 4).
uint64_t ElementBytes(DType d) { return static_cast<uint64_t>(DTypeBits(d) / 8); }

// True if the little-endian element at `p` is +0 or -0 (the sign bit is the
// top bit of the last byte).
bool IsZeroFloat(const uint8_t* p, uint64_t esize) {
  for (uint64_t b = 0; b + 1 < esize; ++b) {
    if (p[b] != 0) return false;
  }
  return (p[esize - 1] & 0x7f) == 0;
}

std::string Ctx(const std::string& name) { return "tensor '" + name + "'"; }

}  // namespace

std::string_view SparsityPatternName(SparsityPattern p) {
  switch (p) {
    case SparsityPattern::kUnstructured:
      return "unstructured";
    case SparsityPattern::k2of4:
      return "2:4";
    default:
      return "none";
  }
}

absl::StatusOr<SparsityPattern> ParseSparsityPattern(std::string_view name) {
  if (name == "unstructured") return SparsityPattern::kUnstructured;
  if (name == "2:4") return SparsityPattern::k2of4;
  return absl::InvalidArgumentError("unknown sparsity pattern '" + std::string(name) +
                                    "' (supported: unstructured, 2:4)");
}

absl::StatusOr<SparseView> SparsityView(const Tensor& t, int axis) {
  ASSIGN_OR_RETURN(uint64_t numel, t.NumElements());
  SparseView v;
  if (axis == 1 && t.dims.size() >= 2) {
    v.rows = t.dims[0];
    v.cols = v.rows == 0 ? 0 : static_cast<int64_t>(numel) / v.rows;
    return v;
  }
  if (axis == 0 && t.dims.size() == 2) {
    v.rows = t.dims[1];
    v.cols = t.dims[0];
    v.transposed = true;
    return v;
  }
  return absl::InvalidArgumentError(
      Ctx(t.name) + ": sparsity axis " + std::to_string(axis) + " does not fit shape " +
      Shape::FromDims(t.dims).ToString() +
      " (axis 1 needs rank >= 2, axis 0 rank 2)");
}

std::string SparseIndicesName(const std::string& name) { return name + ".sparse_indices"; }

absl::StatusOr<Packed2of4> Pack2of4Layout(const Tensor& dense) {
  const std::string ctx = Ctx(dense.name);
  if (!IsPackableFloat(dense.dtype) || dense.quant.quantized()) {
    return absl::InvalidArgumentError(
        ctx + ": the 2:4 packed layout stores f32/f16/bf16 weights only, found " +
        std::string(DTypeName(dense.dtype)) + (dense.quant.quantized() ? " (quantized)" : ""));
  }
  ASSIGN_OR_RETURN(SparseView v, SparsityView(dense, 1));
  if (v.cols % 4 != 0) {
    return absl::InvalidArgumentError(ctx + ": 2:4 packing needs a multiple of 4 columns, found " +
                                      std::to_string(v.cols));
  }
  const uint64_t groups = static_cast<uint64_t>(v.rows) * static_cast<uint64_t>(v.cols / 4);
  Packed2of4 out;
  out.values.name = dense.name;
  out.values.dtype = dense.dtype;
  out.values.dims = dense.dims;
  out.values.data = TensorData::Deferred(groups * 2 * ElementBytes(dense.dtype));
  out.values.provenance = dense.provenance;
  out.values.role = dense.role;
  out.values.layer = dense.layer;
  out.values.sparsity = dense.sparsity;
  out.indices.name = SparseIndicesName(dense.name);
  out.indices.dtype = DType::kU4;
  out.indices.dims = {v.rows, v.cols / 4};
  out.indices.data = TensorData::Deferred((groups + 1) / 2);
  out.indices.provenance = dense.provenance;
  out.indices.layer = dense.layer;
  return out;
}

absl::StatusOr<Packed2of4> Pack2of4(const Tensor& dense) {
  const std::string ctx = Ctx(dense.name);
  ASSIGN_OR_RETURN(Packed2of4 out, Pack2of4Layout(dense));
  ASSIGN_OR_RETURN(SparseView v, SparsityView(dense, 1));
  ASSIGN_OR_RETURN(uint64_t expected, dense.ExpectedBytes());
  if (dense.data.size() != expected) {
    return absl::InvalidArgumentError(ctx + ": has " + std::to_string(dense.data.size()) +
                                      " bytes, expected " + std::to_string(expected));
  }
  const uint64_t esize = ElementBytes(dense.dtype);
  const uint64_t groups = static_cast<uint64_t>(v.rows) * static_cast<uint64_t>(v.cols / 4);
  std::vector<uint8_t> values(groups * 2 * esize);
  std::vector<uint8_t> nibbles((groups + 1) / 2, 0);
  const uint8_t* src = dense.data.data();
  for (uint64_t g = 0; g < groups; ++g) {
    const uint8_t* group = src + g * 4 * esize;
    int pos[2];
    int kept = 0;
    for (int i = 0; i < 4; ++i) {
      if (IsZeroFloat(group + i * esize, esize)) continue;
      if (kept == 2) {
        const uint64_t cols4 = static_cast<uint64_t>(v.cols / 4);
        return absl::InvalidArgumentError(
            ctx + ": row " + std::to_string(g / cols4) + " columns [" +
            std::to_string(g % cols4 * 4) + ", " + std::to_string(g % cols4 * 4 + 4) +
            ") hold 3 or more nonzeros; 2:4 allows 2");
      }
      pos[kept++] = i;
    }
    // Make up two positions with the lowest zeros, then keep them increasing.
    for (int i = 0; kept < 2 && i < 4; ++i) {
      if (kept == 0 || pos[0] != i) pos[kept++] = i;
    }
    if (pos[0] > pos[1]) std::swap(pos[0], pos[1]);
    std::memcpy(values.data() + g * 2 * esize, group + pos[0] * esize, esize);
    std::memcpy(values.data() + (g * 2 + 1) * esize, group + pos[1] * esize, esize);
    const uint8_t nib = static_cast<uint8_t>(pos[0] | (pos[1] << 2));
    nibbles[g / 2] |= static_cast<uint8_t>(g % 2 == 0 ? nib : nib << 4);
  }
  out.values.data = TensorData::Owned(std::move(values));
  out.indices.data = TensorData::Owned(std::move(nibbles));
  return out;
}

absl::Status Unpack2of4(const std::string& name, DType dtype, int64_t rows, int64_t cols,
                        const uint8_t* values, uint64_t values_size, const uint8_t* indices,
                        uint64_t indices_size, uint8_t* out, uint64_t out_size) {
  const std::string ctx = Ctx(name);
  if (!IsPackableFloat(dtype) || rows < 0 || cols < 0 || cols % 4 != 0) {
    return absl::InvalidArgumentError(ctx + ": not a 2:4 packable dtype/shape");
  }
  const uint64_t esize = ElementBytes(dtype);
  const uint64_t groups = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols / 4);
  if (values_size != groups * 2 * esize || indices_size != (groups + 1) / 2 ||
      out_size != groups * 4 * esize) {
    return absl::InvalidArgumentError(
        ctx + ": 2:4 sizes disagree (values " + std::to_string(values_size) + ", indices " +
        std::to_string(indices_size) + ", output " + std::to_string(out_size) + " bytes for " +
        std::to_string(groups) + " groups)");
  }
  std::memset(out, 0, out_size);
  for (uint64_t g = 0; g < groups; ++g) {
    const uint8_t nib = static_cast<uint8_t>((indices[g / 2] >> (g % 2 * 4)) & 0xf);
    const int p0 = nib & 3, p1 = nib >> 2;
    if (p0 >= p1) {
      return absl::InvalidArgumentError(ctx + ": 2:4 index nibble " + std::to_string(g) +
                                        " holds positions " + std::to_string(p0) + ", " +
                                        std::to_string(p1) + "; expected first < second");
    }
    std::memcpy(out + (g * 4 + p0) * esize, values + g * 2 * esize, esize);
    std::memcpy(out + (g * 4 + p1) * esize, values + (g * 2 + 1) * esize, esize);
  }
  return absl::OkStatus();
}

absl::StatusOr<SparsityMeasure> MeasureSparsity(const Tensor& t) {
  const std::string ctx = Ctx(t.name);
  uint64_t bits = 0;
  if (IsPackableFloat(t.dtype) && !t.quant.quantized()) {
    bits = DTypeBits(t.dtype);
  } else if (t.quant.quantized() && t.quant.zero_point.empty() &&
             (t.dtype == DType::kI8 || t.dtype == DType::kI4)) {
    bits = DTypeBits(t.dtype);
  } else {
    return absl::InvalidArgumentError(
        ctx + ": sparsity is measured on f32/f16/bf16 or symmetric i8/i4 weights, found " +
        std::string(DTypeName(t.dtype)) +
        (t.quant.quantized() && !t.quant.zero_point.empty()
             ? " with a zero point (asymmetric quantization of a sparse weight is not supported)"
             : ""));
  }
  ASSIGN_OR_RETURN(uint64_t expected, t.ExpectedBytes());
  if (t.data.size() != expected) {
    return absl::InvalidArgumentError(ctx + ": has " + std::to_string(t.data.size()) +
                                      " bytes, expected " + std::to_string(expected));
  }
  ASSIGN_OR_RETURN(uint64_t numel, t.NumElements());
  const uint8_t* p = t.data.data();
  auto is_zero = [&](uint64_t i) {
    if (bits == 4) return ((p[i / 2] >> (i % 2 * 4)) & 0xf) == 0;
    return IsZeroFloat(p + i * (bits / 8), bits / 8);  // i8: one byte, top bit too
  };
  SparsityMeasure m;
  m.numel = numel;
  std::vector<bool> zero(numel);
  for (uint64_t i = 0; i < numel; ++i) {
    // i8: the sign bit matters (0x80 is -128), so compare the whole byte.
    zero[i] = bits == 8 ? p[i] == 0 : is_zero(i);
    m.zeros += zero[i];
  }
  auto view = SparsityView(t, t.sparsity.sparse() ? t.sparsity.axis : 1);
  if (view.ok() && view->cols % 4 == 0) {
    m.holds_2of4 = true;
    for (int64_t r = 0; r < view->rows && m.holds_2of4; ++r) {
      for (int64_t c = 0; c < view->cols; c += 4) {
        int nz = 0;
        for (int k = 0; k < 4; ++k) nz += !zero[static_cast<uint64_t>(view->At(r, c + k))];
        if (nz > 2) {
          m.holds_2of4 = false;
          break;
        }
      }
    }
  }
  return m;
}

}  // namespace slimpack::ir
