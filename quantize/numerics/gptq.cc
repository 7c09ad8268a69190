// GPTQ (see gptq.h for the algorithm and the reference it follows).
#include "quantize/numerics/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "quantize/numerics/linalg.h"
#include "support/ordered_products.h"
#include "support/threads.h"

namespace slimpack::quant {
namespace {

absl::Status Validate(const float* w, int64_t rows, int64_t cols,
                      const Scheme& scheme, const std::vector<double>& xtx,
                      uint64_t n, const GptqOptions& o) {
  if (rows < 1 || cols < 1 || w == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GPTQ: weights must be a non-null matrix of at least 1x1, got ",
        rows, "x", cols));
  }
  if (absl::Status s = ValidateScheme(scheme, cols); !s.ok()) return s;
  if (xtx.size() != static_cast<size_t>(cols * cols)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GPTQ: X^T X has ", xtx.size(), " entries, expected ", cols, "^2 = ",
        cols * cols));
  }
  if (n == 0) {
    return absl::InvalidArgumentError("GPTQ: no calibration rows (n = 0)");
  }
  if (o.block_size < 1 || o.threads < 1 || !(o.percdamp >= 0) ||
      !std::isfinite(o.percdamp)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GPTQ: block_size ", o.block_size, ", threads ", o.threads,
        ", percdamp ", o.percdamp, ": need >= 1, >= 1, finite >= 0"));
  }
  for (int64_t i = 0; i < cols; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const double v = xtx[i * cols + j];
      if (!std::isfinite(v) || v != xtx[j * cols + i]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "GPTQ: X^T X (", cols, "x", cols, ") entry (", i, ", ", j, ") = ",
            v, " is non-finite or differs from (", j, ", ", i, ")"));
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      if (!std::isfinite(w[r * cols + c])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "GPTQ: weight at row ", r, " col ", c, " is ", w[r * cols + c]));
      }
    }
  }
  return absl::OkStatus();
}

GroupGrid GridOf(const double* x, int64_t len, const Scheme& s) {
  float mn = static_cast<float>(x[0]), mx = mn;
  for (int64_t i = 1; i < len; ++i) {
    const float v = static_cast<float>(x[i]);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  return MakeGrid(mn, mx, 1.0f, s.bits, s.symmetric);
}

// Everything the per-row loop shares (read-only).
struct Plan {
  int64_t cols = 0, group = 0, ngroups = 0, block = 0;
  Scheme scheme;
  bool static_grids = false;
  std::vector<int64_t> perm;  // processing position -> original column
  std::vector<uint8_t> dead;  // per original column
  // U, the upper Cholesky factor of H^-1 (permuted), as the two parts the
  // block loop reads: block bi's diagonal block U[i1:i2, i1:i2] at
  // bi * block^2 (row stride block), and its rows right of the block,
  // U[i1:i2, i2:cols], strip-major (support/ordered_products.h) at
  // strip_offset[bi].
  std::vector<double> diag;
  std::vector<double> strips;
  std::vector<int64_t> strip_offset;
};

// Splits the n x n U into Plan::diag and Plan::strips.
void SplitU(const std::vector<double>& u, Plan* p) {
  const int64_t n = p->cols, nb = (n + p->block - 1) / p->block;
  p->diag.assign(static_cast<size_t>(nb * p->block * p->block), 0.0);
  p->strip_offset.resize(static_cast<size_t>(nb));
  int64_t total = 0;
  for (int64_t bi = 0; bi < nb; ++bi) {
    const int64_t i1 = bi * p->block, i2 = std::min(n, i1 + p->block);
    p->strip_offset[bi] = total;
    total += support::StripCount(n - i2) * (i2 - i1) * support::kStripWidth;
  }
  p->strips.assign(static_cast<size_t>(total), 0.0);
  for (int64_t bi = 0; bi < nb; ++bi) {
    const int64_t i1 = bi * p->block, i2 = std::min(n, i1 + p->block);
    const int64_t count = i2 - i1, sstride = count * support::kStripWidth;
    double* strips = p->strips.data() + p->strip_offset[bi];
    for (int64_t k = 0; k < count; ++k) {
      const double* urow = u.data() + (i1 + k) * n;
      std::copy(urow + i1, urow + i2,
                p->diag.begin() + bi * p->block * p->block + k * p->block);
      for (int64_t j = i2; j < n; ++j) {
        strips[support::StripIndex(k, j - i2, sstride)] = urow[j];
      }
    }
  }
}

constexpr int64_t kTileRows = 32;  // rows sharing one pass over U

// Quantizes rows [r0, r0 + nr) of w. Rows are independent; a tile shares
// each pass over U between its rows. Every weight sees the same operations
// in the same order whatever the tile, so results do not depend on it.
void QuantizeTile(const Plan& p, const float* w, int64_t r0, int64_t nr,
                  QuantizedMatrix* m, double* losses) {
  const int64_t cols = p.cols;
  std::vector<double> orig(static_cast<size_t>(cols));
  std::vector<double> rows(static_cast<size_t>(nr * cols));
  std::vector<GroupGrid> grids(static_cast<size_t>(nr * p.ngroups));
  std::vector<double> err(static_cast<size_t>(nr * p.block));
  std::vector<double> w1(static_cast<size_t>(p.block));
  for (int64_t t = 0; t < nr; ++t) {
    const float* wr = w + (r0 + t) * cols;
    for (int64_t c = 0; c < cols; ++c) orig[c] = p.dead[c] ? 0.0 : wr[c];
    if (p.static_grids) {
      for (int64_t g = 0; g < p.ngroups; ++g) {
        const int64_t c0 = g * p.group;
        grids[t * p.ngroups + g] = GridOf(
            orig.data() + c0, std::min(p.group, cols - c0), p.scheme);
      }
    }
    for (int64_t i = 0; i < cols; ++i) rows[t * cols + i] = orig[p.perm[i]];
    losses[t] = 0;
  }
  for (int64_t i1 = 0; i1 < cols; i1 += p.block) {
    const int64_t i2 = std::min(cols, i1 + p.block), count = i2 - i1;
    const int64_t bi = i1 / p.block;
    const double* ublock = p.diag.data() + bi * p.block * p.block;
    for (int64_t t = 0; t < nr; ++t) {
      double* row = rows.data() + t * cols;
      GroupGrid* tg = grids.data() + t * p.ngroups;
      int8_t* q = m->q.data() + (r0 + t) * cols;
      double* e_out = err.data() + t * p.block;
      std::copy(row + i1, row + i2, w1.begin());
      GroupGrid grid;
      for (int64_t i = 0; i < count; ++i) {
        const int64_t col = i1 + i;
        if (p.static_grids) {
          grid = tg[p.perm[col] / p.group];
        } else if (col % p.group == 0) {
          // From `row` (updated by earlier blocks only), as the reference.
          grid = GridOf(row + col, std::min(p.group, cols - col), p.scheme);
          tg[col / p.group] = grid;
        } else {
          grid = tg[col / p.group];
        }
        const int32_t code = QuantizeValue(static_cast<float>(w1[i]), grid);
        q[p.perm[col]] = static_cast<int8_t>(code);
        const double deq = DequantizeCode(code, grid);
        const double* urow = ublock + i * p.block;  // U[col][i1 + j]
        const double d = urow[i];
        const double e = (w1[i] - deq) / d;
        losses[t] += (w1[i] - deq) * (w1[i] - deq) / (d * d) / 2;
        for (int64_t j = i; j < count; ++j) w1[j] -= e * urow[j];
        e_out[i] = e;
      }
    }
    // Lazy update of the columns after the block: row[j] -= e[k] *
    // U[i1 + k][j] for j >= i2, k rising, for the whole tile at once.
    support::SubtractProducts(rows.data() + i2, cols, err.data(), p.block,
                               p.strips.data() + p.strip_offset[bi],
                               count * support::kStripWidth, nr, count,
                               cols - i2);
  }
  for (int64_t t = 0; t < nr; ++t) {
    for (int64_t g = 0; g < p.ngroups; ++g) {
      const GroupGrid& gr = grids[t * p.ngroups + g];
      m->scale[(r0 + t) * p.ngroups + g] = gr.scale;
      if (!m->zero.empty()) {
        m->zero[(r0 + t) * p.ngroups + g] = static_cast<int8_t>(gr.zero);
      }
    }
  }
}

}  // namespace

absl::StatusOr<QuantizedMatrix> QuantizeGptq(const float* w, int64_t rows,
                                             int64_t cols, const Scheme& scheme,
                                             const std::vector<double>& xtx,
                                             uint64_t n,
                                             const GptqOptions& options) {
  if (absl::Status s = Validate(w, rows, cols, scheme, xtx, n, options);
      !s.ok()) {
    return s;
  }
  Plan p;
  p.cols = cols;
  p.scheme = scheme;
  p.group = EffectiveGroupSize(scheme, cols);
  p.ngroups = NumGroups(scheme, cols);
  p.block = options.block_size;
  p.static_grids = options.static_groups || options.act_order ||
                   p.ngroups == 1;

  // H = 2 X^T X / n; dead columns; act-order permutation; damping.
  std::vector<double> h(xtx.size());
  const double f = 2.0 / static_cast<double>(n);
  for (size_t i = 0; i < xtx.size(); ++i) h[i] = xtx[i] * f;
  GptqStats stats;
  p.dead.assign(static_cast<size_t>(cols), 0);
  for (int64_t i = 0; i < cols; ++i) {
    if (h[i * cols + i] == 0) {
      p.dead[i] = 1;
      h[i * cols + i] = 1;
      ++stats.dead_columns;
    }
  }
  p.perm.resize(static_cast<size_t>(cols));
  std::iota(p.perm.begin(), p.perm.end(), 0);
  if (options.act_order) {
    std::stable_sort(p.perm.begin(), p.perm.end(), [&](int64_t a, int64_t b) {
      return h[a * cols + a] > h[b * cols + b];
    });
    std::vector<double> hp(h.size());
    for (int64_t i = 0; i < cols; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        hp[i * cols + j] = h[p.perm[i] * cols + p.perm[j]];
      }
    }
    h.swap(hp);
  }
  double mean_diag = 0;
  for (int64_t i = 0; i < cols; ++i) mean_diag += h[i * cols + i];
  mean_diag /= static_cast<double>(cols);
  stats.damp = options.percdamp * mean_diag;
  for (int64_t i = 0; i < cols; ++i) h[i * cols + i] += stats.damp;
  std::vector<double> u;
  const int64_t bad = internal::UpperCholeskyOfInverse(h, cols, &u);
  if (bad >= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "GPTQ: Hessian (", cols, "x", cols, ", ", n, " calibration rows) is "
        "not positive definite after damping ", options.percdamp,
        " x mean diagonal (= ", stats.damp, "); pivot at processing position ",
        bad, " (column ", p.perm[bad], ") failed; raise percdamp or "
        "calibrate on more data"));
  }
  h.clear();
  h.shrink_to_fit();
  SplitU(u, &p);
  u.clear();
  u.shrink_to_fit();

  QuantizedMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.scheme = scheme;
  m.q.resize(static_cast<size_t>(rows * cols));
  m.scale.resize(static_cast<size_t>(rows * p.ngroups));
  if (!scheme.symmetric) m.zero.resize(m.scale.size());
  std::vector<double> losses(static_cast<size_t>(rows));
  // Tiles are handed out round-robin; each row's result is independent of
  // which thread or tile computes it.
  const int64_t ntiles = (rows + kTileRows - 1) / kTileRows;
  const int64_t nthreads =
      std::max<int64_t>(1, std::min<int64_t>(options.threads, ntiles));
  auto work = [&](int64_t t) {
    for (int64_t tile = t; tile < ntiles; tile += nthreads) {
      const int64_t r0 = tile * kTileRows;
      QuantizeTile(p, w, r0, std::min(kTileRows, rows - r0), &m,
                   losses.data() + r0);
    }
  };
  // Tiles of a thread the system refuses run on this one: same results.
  support::RunOnThreads(nthreads, work);
  for (double l : losses) stats.proxy_loss += l;  // row order: deterministic
  if (options.stats) *options.stats = stats;
  return m;
}

double OutputError(const float* w, const float* w_hat, int64_t rows,
                   int64_t cols, const std::vector<double>& xtx) {
  double total = 0;
  std::vector<double> d(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      d[c] = static_cast<double>(w[r * cols + c]) - w_hat[r * cols + c];
    }
    for (int64_t i = 0; i < cols; ++i) {
      double s = 0;
      for (int64_t j = 0; j < cols; ++j) s += xtx[i * cols + j] * d[j];
      total += d[i] * s;
    }
  }
  return total;
}

}  // namespace slimpack::quant
