// Kernels for slimpack.MatMulQ / slimpack.GatherQ (see packed_kernels.h).
// Compiled with -ffp-contract=off (passes/CMakeLists.txt) so the
// dequantization is one f32 multiply per element, as ir::DequantizeInto.
#include "runtime/kernels/packed_kernels.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "runtime/gemm.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"
#include "ir/float_convert.h"
#include "ir/quant.h"
#include "runtime/kernels/fused_kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime {
namespace {

using runtime::KernelContext;
using runtime::RtTensor;
using ir::DType;
using ir::IntAt;

// A packed rank-2 weight [rows, cols] with its layout (spec "Layouts").
struct Packed {
  DType dtype;
  int64_t rows = 0, cols = 0;
  int axis = 0;              // 0 or 1
  int64_t group = 1;         // 1 for int8_per_channel
  bool per_channel = true;
  int64_t groups = 0;        // parameter entries along the axis
  const uint8_t* q = nullptr;
  const void* scale = nullptr;  // f32, or f16 when scale_f16
  bool scale_f16 = false;
  const uint8_t* zp = nullptr;  // nullptr: zero point 0
  // ggml_blocks: the block type (kNone otherwise) and bytes per row; q
  // then holds rows x row_bytes and cols is the logical row length.
  ir::GgmlType block_type = ir::GgmlType::kNone;
  uint64_t row_bytes = 0;
};

// Scale entry p as f32 (an f16 scale widened exactly).
template <bool kF16>
float ScaleAt(const Packed& w, uint64_t p) {
  if constexpr (kF16) {
    return ir::F16ToF32(static_cast<const uint16_t*>(w.scale)[p]);
  } else {
    return static_cast<const float*>(w.scale)[p];
  }
}

// Writes rows [r0, r1) x cols [c0, c1) of w's real values row-major into
// out, with ir::DequantizeInto's index arithmetic and formula.
template <DType T, bool kF16>
void DequantRegionT(const Packed& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                    float* out) {
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t c = c0; c < c1; ++c) {
      uint64_t p;
      if (w.axis == 0) {
        p = w.per_channel ? static_cast<uint64_t>(r)
                          : static_cast<uint64_t>((r / w.group) * w.cols + c);
      } else {
        p = w.per_channel ? static_cast<uint64_t>(c)
                          : static_cast<uint64_t>(r * w.groups + c / w.group);
      }
      const int32_t z = w.zp ? IntAt<T>(w.zp, p) : 0;
      const uint64_t i = static_cast<uint64_t>(r * w.cols + c);
      *out++ = static_cast<float>(IntAt<T>(w.q, i) - z) * ScaleAt<kF16>(w, p);
    }
  }
}

template <bool kF16>
void DequantRegionS(const Packed& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                    float* out) {
  switch (w.dtype) {
    case DType::kI8: DequantRegionT<DType::kI8, kF16>(w, r0, r1, c0, c1, out); break;
    case DType::kU8: DequantRegionT<DType::kU8, kF16>(w, r0, r1, c0, c1, out); break;
    case DType::kI4: DequantRegionT<DType::kI4, kF16>(w, r0, r1, c0, c1, out); break;
    default: DequantRegionT<DType::kU4, kF16>(w, r0, r1, c0, c1, out); break;
  }
}

// ggml blocks decode whole rows (ir::DequantizeGgmlRow, the reference);
// a column range is cut from the decoded row.
void DequantBlockRegion(const Packed& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                        float* out) {
  const uint64_t cols = static_cast<uint64_t>(w.cols);
  std::vector<float> row;
  if (c0 != 0 || c1 != w.cols) row.resize(cols);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* src = w.q + static_cast<uint64_t>(r) * w.row_bytes;
    if (row.empty()) {
      ir::DequantizeGgmlRow(w.block_type, src, cols, out);
      out += cols;
    } else {
      ir::DequantizeGgmlRow(w.block_type, src, cols, row.data());
      out = std::copy(row.begin() + c0, row.begin() + c1, out);
    }
  }
}

void DequantRegion(const Packed& w, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                   float* out) {
  if (w.block_type != ir::GgmlType::kNone) {
    DequantBlockRegion(w, r0, r1, c0, c1, out);
  } else if (w.scale_f16) {
    DequantRegionS<true>(w, r0, r1, c0, c1, out);
  } else {
    DequantRegionS<false>(w, r0, r1, c0, c1, out);
  }
}

absl::Status Bad(const KernelContext& ctx, const std::string& what) {
  return absl::InvalidArgumentError("node '" + ctx.node().name + "' (" +
                                    ctx.node().op_type + "): " + what);
}

// A ggml-block weight bound as its bytes, [rows, row bytes] of u8, whose
// logical row length follows from the block type attribute.
absl::StatusOr<Packed> ReadBlocks(const KernelContext& ctx, const RtTensor& w, int64_t axis) {
  Packed p;
  p.dtype = w.dtype();
  ASSIGN_OR_RETURN(int64_t type, ctx.IntAttr("block_type", 0));
  const auto block_type = static_cast<ir::GgmlType>(type);
  const std::optional<ir::GgmlGeometry> geo = ir::GgmlTypeGeometry(block_type);
  if (!geo) return Bad(ctx, "block_type " + std::to_string(type) + " is not a ggml block type");
  if (p.dtype != DType::kU8 || axis != 1) {
    return Bad(ctx, "ggml_blocks weight must be u8 blocks along axis 1, got " +
                        w.DebugString() + " axis " + std::to_string(axis));
  }
  p.rows = w.dim(0);
  p.row_bytes = static_cast<uint64_t>(w.dim(1));
  if (p.row_bytes % geo->block_bytes != 0) {
    return Bad(ctx, std::to_string(p.row_bytes) + " bytes per row are not whole " +
                        std::string(ir::GgmlTypeName(block_type)) + " blocks");
  }
  p.cols = static_cast<int64_t>(p.row_bytes / geo->block_bytes * geo->block_size);
  p.axis = 1;
  p.block_type = block_type;
  p.q = w.raw();
  return p;
}

// Reads the packed weight (input `wi`), its scale (`wi`+1... as given) and
// zero point, checking them against the layout attributes.
absl::StatusOr<Packed> ReadPacked(const KernelContext& ctx, const RtTensor& w,
                                  const RtTensor* scale, const RtTensor* zp) {
  Packed p;
  p.dtype = w.dtype();
  if (w.rank() != 2) return Bad(ctx, "packed weight must be 2-d, got " + w.DebugString());
  p.rows = w.dim(0);
  p.cols = w.dim(1);
  ASSIGN_OR_RETURN(std::string kind_name, ctx.StringAttr("kind", ""));
  ir::QuantKind kind;
  if (!ir::QuantKindFromName(kind_name, &kind) || kind == ir::QuantKind::kNone) {
    return Bad(ctx, "unknown quant kind '" + kind_name + "'");
  }
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttr("axis", 0));
  ASSIGN_OR_RETURN(int64_t group, ctx.IntAttr("group_size", 0));
  if (axis != 0 && axis != 1) return Bad(ctx, "axis " + std::to_string(axis) + " is not 0 or 1");
  if (kind == ir::QuantKind::kGgmlBlocks) return ReadBlocks(ctx, w, axis);
  p.axis = static_cast<int>(axis);
  p.per_channel = kind == ir::QuantKind::kInt8PerChannel;
  const bool int8 = kind != ir::QuantKind::kInt4GroupWise;
  const bool dtype_ok = int8 ? (p.dtype == DType::kI8 || p.dtype == DType::kU8)
                             : (p.dtype == DType::kI4 || p.dtype == DType::kU4);
  if (!dtype_ok) {
    return Bad(ctx, kind_name + " weight has dtype " + std::string(ir::DTypeName(p.dtype)));
  }
  if (!p.per_channel && group < 1) {
    return Bad(ctx, "group_size " + std::to_string(group) + " must be >= 1");
  }
  p.group = p.per_channel ? 1 : group;
  const int64_t n_axis = w.dim(p.axis);
  p.groups = p.per_channel ? n_axis : (n_axis + p.group - 1) / p.group;
  std::vector<int64_t> want;
  if (p.per_channel) {
    want = {n_axis};
  } else {
    want = w.dims();
    want[p.axis] = p.groups;
  }
  if (scale == nullptr || (scale->dtype() != DType::kF32 && scale->dtype() != DType::kF16) ||
      scale->dims() != want) {
    return Bad(ctx, "scale must be f32 or f16" + runtime::DimsToString(want) + ", got " +
                        (scale ? scale->DebugString() : std::string("none")));
  }
  p.scale = scale->raw();
  p.scale_f16 = scale->dtype() == DType::kF16;
  if (zp != nullptr && zp->defined()) {
    if (zp->dtype() != p.dtype || zp->dims() != want) {
      return Bad(ctx, "zero point must be " + std::string(ir::DTypeName(p.dtype)) +
                          runtime::DimsToString(want) + ", got " + zp->DebugString());
    }
    p.zp = zp->raw();
  }
  p.q = w.raw();
  return p;
}

// slimpack.MatMulQ(A, W, scale[, zero_point][, bias]) {kind, axis,
// group_size, trans_b}.
absl::Status MatMulQ(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* w, ctx.RequiredInput(1));
  const RtTensor* bias = ctx.input(4);
  if (bias != nullptr && !bias->defined()) bias = nullptr;
  ASSIGN_OR_RETURN(int64_t trans_b_attr, ctx.IntAttr("trans_b", 0));
  const bool trans_b = trans_b_attr != 0;
  if (a->dtype() != DType::kF32) return runtime::UnsupportedDType(ctx, a->dtype(), "f32");
  if (a->rank() == 0 || w->rank() != 2) {
    return Bad(ctx, "needs A of rank >= 1 and a 2-d weight, got " + a->DebugString() +
                        " and " + w->DebugString());
  }
  // The weight's logical [rows, cols] (ggml blocks are bound as bytes).
  std::optional<Packed> packed;
  if (w->dtype() != DType::kF32) {
    ASSIGN_OR_RETURN(packed, ReadPacked(ctx, *w, ctx.input(2), ctx.input(3)));
  }
  const int64_t w_rows = packed ? packed->rows : w->dim(0);
  const int64_t w_cols = packed ? packed->cols : w->dim(1);
  // A's leading dims are stacked as rows, as MatMul does for a 2-d B.
  const int64_t k = a->dims().back();
  int64_t rows_m = 1;
  for (size_t i = 0; i + 1 < a->rank(); ++i) rows_m *= a->dim(i);
  const int64_t kb = trans_b ? w_cols : w_rows;
  const int64_t n = trans_b ? w_rows : w_cols;
  if (k != kb) {
    return Bad(ctx, "inner dims differ: " + a->DebugString() + " x " + w->DebugString() +
                        (trans_b ? " (trans_b)" : ""));
  }
  std::vector<int64_t> out_dims(a->dims().begin(), a->dims().end() - 1);
  out_dims.push_back(n);
  ASSIGN_OR_RETURN(RtTensor out, ctx.Allocate(DType::kF32, out_dims));
  float* po = out.mutable_data<float>();
  float beta = 0.0f;
  if (bias != nullptr) {
    if (bias->dtype() != DType::kF32 || bias->num_elements() != n) {
      return Bad(ctx, "bias must be f32 with " + std::to_string(n) + " elements, got " +
                          bias->DebugString());
    }
    // As the Gemm kernel: C = beta * bias (beta = 1) broadcast over rows,
    // then accumulated into by the GEMM.
    const float* pc = bias->data<float>();
    for (int64_t i = 0; i < rows_m; ++i) {
      for (int64_t j = 0; j < n; ++j) po[i * n + j] = 1.0f * pc[j];
    }
    beta = 1.0f;
  }
  const int64_t ldb_full = w_cols;
  if (!packed) {
    // Bound dequantized (another op reads the weight): plain Gemm.
    RETURN_IF_ERROR(runtime::Sgemm(false, trans_b, rows_m, n, k, 1.0f, a->data<float>(), k,
                                       w->data<float>(), ldb_full, beta, po, n, ctx.pool()));
    ctx.SetOutput(0, std::move(out));
    return absl::OkStatus();
  }
  const Packed& p = *packed;
  const double work = static_cast<double>(rows_m) * static_cast<double>(n) *
                      static_cast<double>(k);
  if (rows_m > n || rows_m == 0 || n == 0) {
    // Sgemm cuts the rows of A and every tile reads all of W: dequantize W
    // whole for this call. It is no larger than A here (n < m).
    std::vector<float> full(static_cast<size_t>(n * k));
    DequantRegion(p, 0, p.rows, 0, p.cols, full.data());
    RETURN_IF_ERROR(runtime::Sgemm(false, trans_b, rows_m, n, k, 1.0f, a->data<float>(), k,
                                       full.data(), ldb_full, beta, po, n, ctx.pool()));
    ctx.SetOutput(0, std::move(out));
    return absl::OkStatus();
  }
  // One call per tile of output channels, each on a buffer holding only
  // its channels (rows of W if trans_b, else columns), so the dequantized
  // weight never exists whole. Tiles are sized as Sgemm sizes its own
  // (GemmTileExtent); the bits do not depend on the tiling (runtime/gemm.h).
  const int64_t tile_n = runtime::GemmTileExtent(n, work);
  const int64_t tiles = (n + tile_n - 1) / tile_n;
  std::vector<absl::Status> statuses(tiles);
  runtime::ParallelFor(ctx.pool(), tiles, [&](int64_t t) {
    const int64_t j0 = t * tile_n;
    const int64_t nn = std::min(tile_n, n - j0);
    std::vector<float> buf(static_cast<size_t>(nn * k));
    if (trans_b) {
      DequantRegion(p, j0, j0 + nn, 0, k, buf.data());  // [nn, K]
    } else {
      DequantRegion(p, 0, k, j0, j0 + nn, buf.data());  // [K, nn]
    }
    statuses[t] = runtime::SgemmSingleCall(false, trans_b, rows_m, nn, k, 1.0f,
                                               a->data<float>(), k, buf.data(),
                                               trans_b ? k : nn, beta, po + j0, n);
  });
  for (const absl::Status& s : statuses) RETURN_IF_ERROR(s);
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

// slimpack.GatherQ(T, scale, zero_point|"", ids) {kind, axis, group_size}:
// Gather(axis=0) of T's real values, dequantizing only the rows looked up.
absl::Status GatherQ(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* t, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* ids, ctx.RequiredInput(3));
  if (t->rank() != 2) return Bad(ctx, "table must be 2-d, got " + t->DebugString());
  if (ids->dtype() != DType::kI64 && ids->dtype() != DType::kI32) {
    return Bad(ctx, "indices must be i64 or i32, got " + ids->DebugString());
  }
  std::optional<Packed> packed;
  if (t->dtype() != DType::kF32) {
    ASSIGN_OR_RETURN(packed, ReadPacked(ctx, *t, ctx.input(1), ctx.input(2)));
  }
  const int64_t rows = t->dim(0), d = packed ? packed->cols : t->dim(1);
  std::vector<int64_t> dims = ids->dims();
  dims.push_back(d);
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kF32, dims));
  float* po = out.mutable_data<float>();
  const int64_t count = ids->num_elements();
  auto id_at = [&](int64_t j) {
    return ids->dtype() == DType::kI64 ? ids->data<int64_t>()[j] : ids->data<int32_t>()[j];
  };
  for (int64_t j = 0; j < count; ++j) {
    const int64_t i = id_at(j);
    if (i < -rows || i >= rows) {
      return Bad(ctx, "index " + std::to_string(i) + " (element " + std::to_string(j) +
                          ") is out of range for axis size " + std::to_string(rows));
    }
  }
  if (!packed) {
    for (int64_t j = 0; j < count; ++j) {
      int64_t i = id_at(j);
      if (i < 0) i += rows;
      std::copy_n(t->data<float>() + i * d, d, po + j * d);
    }
    ctx.SetOutput(0, std::move(out));
    return absl::OkStatus();
  }
  for (int64_t j = 0; j < count; ++j) {
    int64_t i = id_at(j);
    if (i < 0) i += rows;
    DequantRegion(*packed, i, i + 1, 0, d, po + j * d);
  }
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterPackedKernels(runtime::KernelRegistry& registry) {
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, kMatMulQOp, MatMulQ));
  RETURN_IF_ERROR(registry.Register(kSlimpackDomain, kGatherQOp, GatherQ));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime
