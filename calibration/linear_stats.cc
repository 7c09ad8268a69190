// Linear-layer input statistics. X^T X is accumulated on its upper triangle
// (and the lower corners of 8-row diagonal bands) and mirrored when read,
// halving the work without changing any sum.
#include "calibration/linear_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "support/ordered_products.h"
#include "support/simd_clones.h"

namespace slimpack::calibration {
namespace {

// Rows X^T X takes at once. Each entry still adds x_r[i] * x_r[j] for r in
// row order (support::SubtractProducts with negated coefficients), so the
// sums have the bits of the row-by-row update; the batch turns K^2 memory
// traffic per row into a register-blocked pass per batch.
constexpr int64_t kBatch = 64;
// Rows gathered before the bands take them: up to 8 batches, so that the
// two ParallelFor calls per chunk are amortised where a batch is little
// work (small K), while the scratch (16 * K bytes per row) stays within
// 4 MiB or one batch, whichever is larger, per accumulator.
int64_t ChunkRows(int64_t k) {
  const int64_t fit = (int64_t{4} << 20) / (16 * std::max<int64_t>(k, 1)) / kBatch * kBatch;
  return std::clamp<int64_t>(fit, kBatch, 8 * kBatch);
}

// One full strip of a batch, features contiguous in each row: the vector
// form of GatherFeatures' loop (the same conversions, |v|, products and
// sums per lane), cloned for AVX-512 and AVX2. The transposed copy is
// written after the strip, from it, so its stores run along memory.
SLIMPACK_SIMD_CLONES_512 void GatherStrip(const float* x, int64_t row_step, int64_t count,
                                          double* sum_abs, double* sum_sq, double* strip,
                                          double* neg_t) {
  typedef double V8d __attribute__((vector_size(64), aligned(8)));
  typedef uint64_t V8u __attribute__((vector_size(64), aligned(8)));
  typedef float V8f __attribute__((vector_size(32), aligned(4)));
  constexpr int64_t w = support::kStripWidth;
  static_assert(w == 8, "a strip is one V8d");
  V8d sa = *reinterpret_cast<const V8d*>(sum_abs);
  V8d sq = *reinterpret_cast<const V8d*>(sum_sq);
  const V8u magnitude = ~(V8u{} + (uint64_t{1} << 63));
  for (int64_t slot = 0; slot < count; ++slot) {
    const V8d v = __builtin_convertvector(
        *reinterpret_cast<const V8f*>(x + slot * row_step), V8d);
    sa += reinterpret_cast<V8d>(reinterpret_cast<V8u>(v) & magnitude);
    sq += v * v;
    *reinterpret_cast<V8d*>(strip + slot * w) = v;
  }
  *reinterpret_cast<V8d*>(sum_abs) = sa;
  *reinterpret_cast<V8d*>(sum_sq) = sq;
  for (int64_t c = 0; c < w; ++c) {
    for (int64_t slot = 0; slot < count; ++slot) neg_t[c * kBatch + slot] = -strip[slot * w + c];
  }
}

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
  if (hessian_) xtx_.assign(k * k, 0);
}

void LinearStatsAccumulator::GatherFeatures(const float* x, int64_t rows,
                                            int64_t row_step, int64_t feature_step,
                                            int64_t f0, int64_t f1) {
  const int64_t k = layer_.in_features;
  constexpr int64_t w = support::kStripWidth;
  const int64_t strips_per_batch = support::StripCount(k) * kBatch * w;
  // A batch at a time, one strip of 8 features at a time: the strip's rows
  // are written contiguously and the transposed copy's 8 x kBatch block
  // stays in L1. Each feature still takes the rows in order.
  for (int64_t r0 = 0; r0 < rows; r0 += kBatch) {
    const int64_t batch = r0 / kBatch, count = std::min(kBatch, rows - r0);
    // No batch buffers without a Hessian (null plus an offset is undefined).
    double* neg_t = hessian_ ? batch_neg_t_.data() + batch * k * kBatch : nullptr;
    for (int64_t c0 = f0; c0 < f1; c0 += w) {
      const int64_t cn = std::min(w, f1 - c0);
      double* strip = hessian_ ? batch_strips_.data() + batch * strips_per_batch +
                                     (c0 / w) * kBatch * w
                               : nullptr;
      double sum_abs[w], sum_sq[w];
      for (int64_t c = 0; c < cn; ++c) {
        sum_abs[c] = sum_abs_[c0 + c];
        sum_sq[c] = sum_sq_[c0 + c];
      }
      int64_t slot = 0;
      if (cn == w && feature_step == 1 && hessian_) {
        GatherStrip(x + r0 * row_step + c0, row_step, count, sum_abs, sum_sq, strip,
                    neg_t + c0 * kBatch);
        slot = count;
      }
      for (; slot < count; ++slot) {
        const float* row = x + (r0 + slot) * row_step + c0 * feature_step;
        for (int64_t c = 0; c < cn; ++c) {
          const double v = row[c * feature_step];
          sum_abs[c] += std::fabs(v);
          sum_sq[c] += v * v;
          if (hessian_) {
            neg_t[(c0 + c) * kBatch + slot] = -v;
            strip[slot * w + c] = v;
          }
        }
      }
      for (int64_t c = 0; c < cn; ++c) {
        sum_abs_[c0 + c] = sum_abs[c];
        sum_sq_[c0 + c] = sum_sq[c];
      }
    }
  }
}

void LinearStatsAccumulator::FlushBands(int64_t rows, int64_t b0, int64_t b1) {
  const int64_t k = layer_.in_features;
  constexpr int64_t w = support::kStripWidth;
  const int64_t strips_per_batch = support::StripCount(k) * kBatch * w;
  // Upper triangle by 8-row bands from the diagonal on; the band's lower
  // corner is computed too and never read (XtX() mirrors the upper part).
  // A band takes the batches in row order, so each entry's sum does.
  for (int64_t band = b0; band < b1; ++band) {
    const int64_t i0 = band * w;
    for (int64_t r0 = 0; r0 < rows; r0 += kBatch) {
      const int64_t batch = r0 / kBatch;
      support::SubtractProducts(
          xtx_.data() + i0 * k + i0, k, batch_neg_t_.data() + batch * k * kBatch + i0 * kBatch,
          kBatch, batch_strips_.data() + batch * strips_per_batch + band * kBatch * w,
          kBatch * w, std::min(w, k - i0), std::min(kBatch, rows - r0), k - i0);
    }
  }
}

absl::Status LinearStatsAccumulator::Add(const runtime::RtTensor& x,
                                         runtime::ThreadPool* pool) {
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
  const int threads = pool != nullptr ? pool->num_threads() : 1;
  // One NaN/Inf would poison every statistic of this layer (and the GPTQ/AWQ
  // scales built from them); the inputs were checked finite when read, so
  // this is an overflow inside the graph, named here by layer. Counted
  // before anything is added, so a refused tensor leaves no trace.
  const int64_t n = x.num_elements();
  std::vector<int64_t> nonfinite_per_task(static_cast<size_t>(threads), 0);
  runtime::ParallelFor(pool, threads, [&](int64_t t) {
    int64_t count = 0;
    for (int64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
      count += !std::isfinite(data[i]);
    }
    nonfinite_per_task[static_cast<size_t>(t)] = count;
  });
  int64_t nonfinite = 0;
  for (int64_t c : nonfinite_per_task) nonfinite += c;
  if (nonfinite > 0) {
    return absl::InvalidArgumentError(
        "linear node '" + layer_.node + "': input '" + layer_.input + "' holds " +
        std::to_string(nonfinite) + " NaN/Inf values of " + std::to_string(n) +
        " (the graph overflowed on this calibration data; its statistics would be NaN)");
  }
  const int64_t rows = n / k;
  const int64_t row_step = layer_.trans_a ? 1 : k;
  const int64_t feature_step = layer_.trans_a ? rows : 1;
  // Feature ranges of whole 8-column strips (each task writes its own
  // elements; neighbours may share a cache line at the edges) and band
  // ranges of about equal work (band s costs K - 8s).
  const int64_t bands = support::StripCount(k);
  const int64_t tasks = std::min<int64_t>(bands, int64_t{threads} * 3);
  std::vector<int64_t> band_split(static_cast<size_t>(tasks) + 1, bands);
  band_split[0] = 0;
  {
    const int64_t total = bands * k - support::kStripWidth * bands * (bands - 1) / 2;
    int64_t done = 0, t = 1;
    for (int64_t s = 0; s < bands && t < tasks; ++s) {
      done += k - support::kStripWidth * s;
      if (done * tasks >= total * t) band_split[static_cast<size_t>(t++)] = s + 1;
    }
  }
  const int64_t chunk_rows = ChunkRows(k);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t count = std::min(chunk_rows, rows - r0);
    if (hessian_) {
      const int64_t batches = (count + kBatch - 1) / kBatch;
      const size_t neg_size = static_cast<size_t>(batches * k * kBatch);
      const size_t strip_size = static_cast<size_t>(
          batches * bands * kBatch * support::kStripWidth);
      if (batch_neg_t_.size() < neg_size) batch_neg_t_.resize(neg_size);
      if (batch_strips_.size() < strip_size) batch_strips_.resize(strip_size);
    }
    const float* chunk = data + r0 * row_step;
    runtime::ParallelFor(pool, tasks, [&](int64_t t) {
      const int64_t f0 = std::min(k, bands * t / tasks * support::kStripWidth);
      const int64_t f1 = std::min(k, bands * (t + 1) / tasks * support::kStripWidth);
      GatherFeatures(chunk, count, row_step, feature_step, f0, f1);
    });
    if (hessian_) {
      runtime::ParallelFor(pool, tasks, [&](int64_t t) {
        FlushBands(count, band_split[static_cast<size_t>(t)],
                   band_split[static_cast<size_t>(t) + 1]);
      });
    }
    rows_ += static_cast<uint64_t>(count);
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
