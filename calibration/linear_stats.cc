// Linear-layer input statistics. X^T X is accumulated on its upper triangle
// (and the lower corners of 8-row diagonal bands) and mirrored when read,
// halving the work without changing any sum.
#include "calibration/linear_stats.h"

#include <algorithm>
#include <cmath>

#include "support/ordered_products.h"

namespace slimpack::calibration {
namespace {

// Rows X^T X takes at once. Each entry still adds x_r[i] * x_r[j] for r in
// row order (support::SubtractProducts with negated coefficients), so the
// sums have the bits of the row-by-row update; the batch turns K^2 memory
// traffic per row into a register-blocked pass per batch.
constexpr int64_t kBatch = 64;

}  // namespace

std::vector<LinearLayer> FindLinearLayers(const ir::Graph& graph) {
  std::vector<LinearLayer> out;
  for (const ir::Node& node : graph.nodes) {
    if (!node.domain.empty()) continue;
    if (node.op_type != "MatMul" && node.op_type != "Gemm") continue;
    if (node.inputs.size() < 2 || node.inputs[0].empty()) continue;
    const ir::Tensor* w = graph.FindInitializer(node.inputs[1]);
    if (w == nullptr || w->dims.size() != 2) continue;
    LinearLayer l;
    l.node = node.name;
    l.op_type = node.op_type;
    l.input = node.inputs[0];
    l.weight = node.inputs[1];
    bool trans_b = false;
    if (node.op_type == "Gemm") {
      if (const ir::Attribute* a = node.FindAttribute("transA")) l.trans_a = a->i != 0;
      if (const ir::Attribute* b = node.FindAttribute("transB")) trans_b = b->i != 0;
    }
    l.in_features = trans_b ? w->dims[1] : w->dims[0];
    out.push_back(std::move(l));
  }
  return out;
}

LinearStatsAccumulator::LinearStatsAccumulator(LinearLayer layer, bool hessian)
    : layer_(std::move(layer)), hessian_(hessian) {
  const size_t k = static_cast<size_t>(layer_.in_features);
  sum_abs_.assign(k, 0);
  sum_sq_.assign(k, 0);
  if (hessian_) {
    xtx_.assign(k * k, 0);
    batch_neg_t_.assign(k * kBatch, 0);
    batch_strips_.assign(static_cast<size_t>(
        support::StripCount(layer_.in_features) * kBatch * support::kStripWidth), 0);
  }
}

void LinearStatsAccumulator::AddRow(const float* x, int64_t stride, int64_t slot) {
  const int64_t k = layer_.in_features;
  for (int64_t i = 0; i < k; ++i) {
    const double v = x[i * stride];
    sum_abs_[i] += std::fabs(v);
    sum_sq_[i] += v * v;
    if (hessian_) {
      batch_neg_t_[i * kBatch + slot] = -v;
      batch_strips_[support::StripIndex(slot, i, kBatch * support::kStripWidth)] = v;
    }
  }
  ++rows_;
}

void LinearStatsAccumulator::FlushBatch(int64_t count) {
  if (!hessian_ || count == 0) return;
  const int64_t k = layer_.in_features;
  constexpr int64_t w = support::kStripWidth;
  // Upper triangle by 8-row bands from the diagonal on; the band's lower
  // corner is computed too and never read (XtX() mirrors the upper part).
  for (int64_t i0 = 0; i0 < k; i0 += w) {
    support::SubtractProducts(xtx_.data() + i0 * k + i0, k,
                              batch_neg_t_.data() + i0 * kBatch, kBatch,
                              batch_strips_.data() + (i0 / w) * kBatch * w,
                              kBatch * w, std::min(w, k - i0), count, k - i0);
  }
}

absl::Status LinearStatsAccumulator::Add(const runtime::RtTensor& x) {
  const int64_t k = layer_.in_features;
  if (x.dtype() != ir::DType::kF32 || x.rank() == 0) {
    return absl::InvalidArgumentError(
        "linear node '" + layer_.node + "': input '" + layer_.input +
        "' is " + x.DebugString() + ", expected f32 with feature dim " +
        std::to_string(k));
  }
  const int64_t feature_dim = layer_.trans_a ? x.dim(0) : x.dim(x.rank() - 1);
  if (feature_dim != k || (layer_.trans_a && x.rank() != 2)) {
    return absl::InvalidArgumentError(
        "linear node '" + layer_.node + "': input '" + layer_.input + "' is " +
        x.DebugString() + ", expected feature dim " + std::to_string(k) +
        (layer_.trans_a ? " on axis 0 of a rank-2 tensor" : " on the last axis"));
  }
  const float* data = x.data<float>();
  if (k == 0) return absl::OkStatus();
  // One NaN/Inf would poison every statistic of this layer (and the GPTQ/AWQ
  // scales built from them); the inputs were checked finite when read, so
  // this is an overflow inside the graph, named here by layer.
  int64_t nonfinite = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) nonfinite += !std::isfinite(data[i]);
  if (nonfinite > 0) {
    return absl::InvalidArgumentError(
        "linear node '" + layer_.node + "': input '" + layer_.input + "' holds " +
        std::to_string(nonfinite) + " NaN/Inf values of " + std::to_string(x.num_elements()) +
        " (the graph overflowed on this calibration data; its statistics would be NaN)");
  }
  const int64_t rows = x.num_elements() / k;
  for (int64_t r0 = 0; r0 < rows; r0 += kBatch) {
    const int64_t count = std::min(kBatch, rows - r0);
    for (int64_t b = 0; b < count; ++b) {
      const int64_t r = r0 + b;
      if (layer_.trans_a) {
        AddRow(data + r, rows, b);  // column r of [K, M]
      } else {
        AddRow(data + r * k, 1, b);
      }
    }
    FlushBatch(count);
  }
  return absl::OkStatus();
}

std::vector<double> LinearStatsAccumulator::MeanAbs() const {
  std::vector<double> out(sum_abs_);
  if (rows_ > 0) for (double& v : out) v /= static_cast<double>(rows_);
  return out;
}

std::vector<double> LinearStatsAccumulator::MeanSquare() const {
  std::vector<double> out(sum_sq_);
  if (rows_ > 0) for (double& v : out) v /= static_cast<double>(rows_);
  return out;
}

std::vector<double> LinearStatsAccumulator::XtX() const {
  std::vector<double> out(xtx_);
  const size_t k = static_cast<size_t>(layer_.in_features);
  for (size_t i = 0; i < k && hessian_; ++i) {
    for (size_t j = 0; j < i; ++j) out[i * k + j] = out[j * k + i];
  }
  return out;
}

}  // namespace slimpack::calibration
