// MatMul (numpy semantics: 1-d promotion, broadcast batch dims) and Gemm.
#include <algorithm>

#include "runtime/gemm.h"
#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {

using ir::DType;

namespace {

// The node-cache key of a constant B's panels (the only value Gemm and
// MatMul keep).
constexpr int kPanelsKey = 0;

// A constant B's panels, packed on the plan's first run and kept in the
// node's cache for the others; nullptr (each call's tiles pack their own
// blocks, in parallel) where there is no cache, B can change between
// runs, the product is one row (the GEMV reads B as it is), or the cache's
// budget cannot keep them: packing a whole weight on one thread only to
// drop it would cost every call more than the tiles' packing.
absl::StatusOr<std::shared_ptr<const PackedB>> ConstantPanels(KernelContext& ctx, bool trans_b,
                                                              int64_t m, int64_t k, int64_t n,
                                                              const float* b, int64_t ldb) {
  const int64_t nr = gemm::BestMicroKernel().nr;
  const int64_t bytes = (n + nr - 1) / nr * nr * k * static_cast<int64_t>(sizeof(float));
  if (ctx.node_cache() == nullptr || !ctx.input_is_constant(1) || m <= 1 ||
      !ctx.node_cache()->WouldKeep(kPanelsKey, bytes)) {
    return std::shared_ptr<const PackedB>();
  }
  return ctx.node_cache()->GetOrBuild<PackedB>(
      kPanelsKey, [&]() -> absl::StatusOr<std::shared_ptr<const PackedB>> {
        return PackedB::Pack(trans_b, k, n, b, ldb);
      });
}

}  // namespace

absl::Status MatMul(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(1));
  if (a->dtype() != DType::kF32) return UnsupportedDType(ctx, a->dtype(), "f32");
  RETURN_IF_ERROR(ctx.ExpectDType(1, DType::kF32));
  if (a->rank() == 0 || b->rank() == 0) {
    return absl::InvalidArgumentError("MatMul operands must have rank >= 1, got " +
                                      a->DebugString() + " and " + b->DebugString());
  }
  // 1-d operands are promoted to matrices and the added axis dropped after.
  std::vector<int64_t> ad = a->dims(), bd = b->dims();
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back();
  const int64_t n = bd.back();
  if (bd[bd.size() - 2] != k) {
    return absl::InvalidArgumentError(
        "MatMul inner dims differ: " + a->DebugString() + " x " + b->DebugString());
  }
  std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2);
  std::vector<int64_t> b_batch(bd.begin(), bd.end() - 2);
  ASSIGN_OR_RETURN(auto batch, BroadcastDims({a_batch, b_batch}));
  std::vector<int64_t> out_dims = batch;
  if (!a_vec) out_dims.push_back(m);
  if (!b_vec) out_dims.push_back(n);
  ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kF32, out_dims));
  const float* pa = a->data<float>();
  const float* pb = b->data<float>();
  float* po = out.mutable_data<float>();

  int64_t batch_count = 1;
  for (int64_t d : batch) batch_count *= d;
  int64_t b_count = 1;
  for (int64_t d : b_batch) b_count *= d;
  if (b_count == 1) {
    // B is one matrix shared by every batch: one GEMM with the batches
    // stacked as rows (A's batch dims are all of the output's).
    ASSIGN_OR_RETURN(std::shared_ptr<const PackedB> panels,
                     ConstantPanels(ctx, false, batch_count * m, k, n, pb, n));
    RETURN_IF_ERROR(SgemmConstantB(false, false, batch_count * m, n, k, 1.0f, pa, k, pb, n,
                                   panels.get(), 0.0f, po, n, ctx.pool()));
    ctx.SetOutput(0, std::move(out));
    return absl::OkStatus();
  }
  // Per-batch matrix offsets (in matrices) for A and B.
  std::vector<int64_t> a_off(batch_count), b_off(batch_count);
  ForEachBroadcast<2>(batch,
                      {BroadcastStrides(a_batch, batch), BroadcastStrides(b_batch, batch)},
                      [&](int64_t o, const std::array<int64_t, 2>& in) {
                        a_off[o] = in[0];
                        b_off[o] = in[1];
                      });
  if (batch.empty()) {
    a_off.assign(1, 0);
    b_off.assign(1, 0);
  }
  std::vector<absl::Status> statuses(batch_count);
  ParallelFor(ctx.pool(), batch_count, [&](int64_t i) {
    statuses[i] = Sgemm(false, false, m, n, k, 1.0f, pa + a_off[i] * m * k, k,
                        pb + b_off[i] * k * n, n, 0.0f, po + i * m * n, n,
                        nullptr);
  });
  for (const auto& s : statuses) RETURN_IF_ERROR(s);
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

absl::Status Gemm(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* a, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* b, ctx.RequiredInput(1));
  const RtTensor* c = ctx.input(2);
  ASSIGN_OR_RETURN(int64_t trans_a, ctx.IntAttr("transA", 0));
  ASSIGN_OR_RETURN(int64_t trans_b, ctx.IntAttr("transB", 0));
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttr("alpha", 1.0f));
  ASSIGN_OR_RETURN(float beta, ctx.FloatAttr("beta", 1.0f));
  if (a->dtype() != DType::kF32) return UnsupportedDType(ctx, a->dtype(), "f32");
  RETURN_IF_ERROR(ctx.ExpectDType(1, DType::kF32));
  RETURN_IF_ERROR(ctx.ExpectDType(2, DType::kF32));
  if (a->rank() != 2 || b->rank() != 2) {
    return absl::InvalidArgumentError("Gemm needs 2-d A and B, got " +
                                      a->DebugString() + " and " + b->DebugString());
  }
  const int64_t m = trans_a ? a->dim(1) : a->dim(0);
  const int64_t k = trans_a ? a->dim(0) : a->dim(1);
  const int64_t kb = trans_b ? b->dim(1) : b->dim(0);
  const int64_t n = trans_b ? b->dim(0) : b->dim(1);
  if (k != kb) {
    return absl::InvalidArgumentError(
        "Gemm inner dims differ: op(A) is " + std::to_string(m) + "x" +
        std::to_string(k) + ", op(B) is " + std::to_string(kb) + "x" +
        std::to_string(n));
  }
  ASSIGN_OR_RETURN(RtTensor out, ctx.Allocate(DType::kF32, {m, n}));
  float* po = out.mutable_data<float>();
  float gemm_beta = 0.0f;
  if (c != nullptr && beta != 0.0f) {
    // C broadcasts unidirectionally to [M, N].
    ASSIGN_OR_RETURN(auto dims, BroadcastDims({c->dims(), {m, n}}));
    if (dims != std::vector<int64_t>{m, n}) {
      return absl::InvalidArgumentError("Gemm C " + c->DebugString() +
                                        " does not broadcast to [" +
                                        std::to_string(m) + "," + std::to_string(n) + "]");
    }
    const float* pc = c->data<float>();
    ForEachBroadcast<1>(dims, {BroadcastStrides(c->dims(), dims)},
                        [&](int64_t o, const std::array<int64_t, 1>& in) {
                          po[o] = beta * pc[in[0]];
                        });
    gemm_beta = 1.0f;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const PackedB> panels,
                   ConstantPanels(ctx, trans_b != 0, m, k, n, b->data<float>(), b->dim(1)));
  RETURN_IF_ERROR(SgemmConstantB(trans_a != 0, trans_b != 0, m, n, k, alpha, a->data<float>(),
                                 a->dim(1), b->data<float>(), b->dim(1), panels.get(), gemm_beta,
                                 po, n, ctx.pool()));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace slimpack::runtime::kernels
