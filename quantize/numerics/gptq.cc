// GPTQ (see gptq.h for the algorithm and the reference it follows).
#include "quantize/numerics/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "quantize/numerics/linalg.h"
#include "support/large_array.h"
#include "support/ordered_products.h"
#include "support/threads.h"

namespace slimpack::quant {
namespace {

// Every entry of the n x n `a` finite and equal to its transpose's, read in
// 64 x 64 tiles: a row-major walk against a column-major one would miss the
// cache on every read of a 4096-wide matrix.
bool FiniteAndSymmetric(const double* a, int64_t n) {
  constexpr int64_t kTile = 64;
  bool ok = true;
  for (int64_t i = 0; i < n * n; ++i) ok &= std::isfinite(a[i]);
  for (int64_t i0 = 0; i0 < n; i0 += kTile) {
    for (int64_t j0 = i0; j0 < n; j0 += kTile) {
      for (int64_t i = i0; i < std::min(n, i0 + kTile); ++i) {
        for (int64_t j = j0; j < std::min(n, j0 + kTile); ++j) {
          ok &= a[i * n + j] == a[j * n + i];
        }
      }
    }
  }
  return ok;
}

absl::Status Validate(const float* w, int64_t rows, int64_t cols,
                      const std::vector<double>& xtx, uint64_t n,
                      const GptqOptions& o) {
  if (rows < 1 || cols < 1 || w == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GPTQ: weights must be a non-null matrix of at least 1x1, got ",
        rows, "x", cols));
  }
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
  if (!FiniteAndSymmetric(xtx.data(), cols)) {
    // Name the first offending entry in row-major order.
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
  return MakeGrid(mn, mx, 1.0f, s.bits, s.symmetric, false, s.scale_dtype);
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
  support::LargeArray<double> diag;
  support::LargeArray<double> strips;
  std::vector<int64_t> strip_offset;
};

// Splits the n x n U into Plan::diag and Plan::strips.
void SplitU(const support::LargeArray<double>& u, Plan* p) {
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

constexpr int64_t kTileRows = 64;  // rows sharing one pass over U, at most

// Rows per tile: kTileRows, or fewer (a multiple of the update kernel's
// 8-row block) when that would leave a thread without a tile. Every row's
// operations are the same whatever its tile, so results do not depend on it.
int64_t TileRows(int64_t rows, int threads) {
  const int64_t per_thread = (rows + threads - 1) / threads;
  return std::clamp<int64_t>((per_thread + 7) / 8 * 8, 8, kTileRows);
}

// Rounds onto Scheme's grids (quant_types.h) and records codes and grids in
// a QuantizedMatrix. Grids of a group are fixed when it starts, from `row`
// (updated by earlier blocks only), as the reference does.
class SchemeRounder {
 public:
  SchemeRounder(const Plan& p, int64_t r0, int64_t nr, QuantizedMatrix* m)
      : p_(p), r0_(r0), m_(m), grids_(static_cast<size_t>(nr * p.ngroups)) {}

  void Begin(int64_t t, const double* orig) {
    if (!p_.static_grids) return;
    for (int64_t g = 0; g < p_.ngroups; ++g) {
      const int64_t c0 = g * p_.group;
      grids_[t * p_.ngroups + g] = GridOf(orig + c0, std::min(p_.group, p_.cols - c0), p_.scheme);
    }
  }

  // w: the weight at processing position col, as updated in this block;
  // row: the row as updated by earlier blocks. Returns the decoded value.
  double Round(int64_t t, int64_t col, double w, const double* row, const double*, int64_t) {
    GroupGrid* tg = grids_.data() + t * p_.ngroups;
    GroupGrid grid;
    if (p_.static_grids) {
      grid = tg[p_.perm[col] / p_.group];
    } else if (col % p_.group == 0) {
      grid = GridOf(row + col, std::min(p_.group, p_.cols - col), p_.scheme);
      tg[col / p_.group] = grid;
    } else {
      grid = tg[col / p_.group];
    }
    const int32_t code = QuantizeValue(static_cast<float>(w), grid);
    m_->q[(r0_ + t) * p_.cols + p_.perm[col]] = static_cast<int8_t>(code);
    return DequantizeCode(code, grid);
  }

  void Finish(int64_t t) {
    for (int64_t g = 0; g < p_.ngroups; ++g) {
      const GroupGrid& gr = grids_[t * p_.ngroups + g];
      m_->scale[(r0_ + t) * p_.ngroups + g] = gr.scale;
      if (!m_->zero.empty()) m_->zero[(r0_ + t) * p_.ngroups + g] = static_cast<int8_t>(gr.zero);
    }
  }

  absl::Status status() const { return absl::OkStatus(); }

 private:
  const Plan& p_;
  int64_t r0_;
  QuantizedMatrix* m_;
  std::vector<GroupGrid> grids_;
};

// Rounds onto a caller's GptqGrid. A grid block is fixed when GPTQ reaches
// its first column, from the weights as they stand then: the ones inside
// the current lazy block with its updates so far (`w1`), the rest as
// earlier blocks left them.
class CallerGridRounder {
 public:
  CallerGridRounder(const Plan& p, int64_t r0, GptqGrid& grid)
      : p_(p), r0_(r0), grid_(grid), values_(static_cast<size_t>(grid.block())) {}

  void Begin(int64_t, const double*) {}

  double Round(int64_t t, int64_t col, double w, const double* row, const double* w1,
               int64_t i1) {
    const int64_t block = grid_.block();
    if (col % block == 0 && status_.ok()) {
      const int64_t len = std::min(block, p_.cols - col);
      const int64_t i2 = std::min(p_.cols, i1 + p_.block);
      for (int64_t k = 0; k < len; ++k) {
        const int64_t c = col + k;
        values_[k] = static_cast<float>(c < i2 ? w1[c - i1] : row[c]);
      }
      status_ = grid_.Fix(r0_ + t, col, values_.data(), len);
    }
    if (!status_.ok()) return w;
    return grid_.Round(r0_ + t, col, static_cast<float>(w));
  }

  void Finish(int64_t) {}
  absl::Status status() const { return status_; }

 private:
  const Plan& p_;
  int64_t r0_;
  GptqGrid& grid_;
  std::vector<float> values_;
  absl::Status status_;
};

// A thread's buffers for its tiles, sized for kTileRows rows once: a
// fresh megabyte per tile costs a page fault per 4 KiB each time.
struct TileScratch {
  std::vector<double> orig, rows, err, w1s;
  void Size(const Plan& p) {
    orig.resize(static_cast<size_t>(p.cols));
    rows.resize(static_cast<size_t>(kTileRows * p.cols));
    err.resize(static_cast<size_t>(kTileRows * p.block));
    w1s.resize(static_cast<size_t>(kTileRows * p.block));
  }
};

// Quantizes rows [r0, r0 + nr) of w. Rows are independent; a tile shares
// each pass over U between its rows. Every weight sees the same operations
// in the same order whatever the tile, so results do not depend on it.
template <typename Rounder>
void QuantizeTile(const Plan& p, const float* w, int64_t r0, int64_t nr, Rounder& rounder,
                  TileScratch& scratch, double* losses) {
  const int64_t cols = p.cols;
  scratch.Size(p);
  std::vector<double>& orig = scratch.orig;
  std::vector<double>& rows = scratch.rows;
  std::vector<double>& err = scratch.err;
  std::vector<double>& w1s = scratch.w1s;
  for (int64_t t = 0; t < nr; ++t) {
    const float* wr = w + (r0 + t) * cols;
    for (int64_t c = 0; c < cols; ++c) orig[c] = p.dead[c] ? 0.0 : wr[c];
    rounder.Begin(t, orig.data());
    for (int64_t i = 0; i < cols; ++i) rows[t * cols + i] = orig[p.perm[i]];
    losses[t] = 0;
  }
  for (int64_t i1 = 0; i1 < cols; i1 += p.block) {
    const int64_t i2 = std::min(cols, i1 + p.block), count = i2 - i1;
    const int64_t bi = i1 / p.block;
    const double* ublock = p.diag.data() + bi * p.block * p.block;
    for (int64_t t = 0; t < nr; ++t) {
      const double* row = rows.data() + t * cols;
      std::copy(row + i1, row + i2, w1s.begin() + t * p.block);
    }
    // Column by column, each column across the tile's rows: a row's
    // rounding, error and update form one long dependency chain per
    // column (a division, the grid, the update), and the rows' chains are
    // independent, so taking the rows in turn lets the CPU overlap them.
    // Each row still takes its columns in order: the same bits as one row
    // at a time.
    for (int64_t i = 0; i < count; ++i) {
      const int64_t col = i1 + i;
      const double* urow = ublock + i * p.block;  // U[col][i1 + j]
      const double d = urow[i];
      for (int64_t t = 0; t < nr; ++t) {
        double* w1 = w1s.data() + t * p.block;
        const double deq = rounder.Round(t, col, w1[i], rows.data() + t * cols, w1, i1);
        const double e = (w1[i] - deq) / d;
        losses[t] += (w1[i] - deq) * (w1[i] - deq) / (d * d) / 2;
        support::SubtractScaled(w1 + i, urow + i, e, count - i);
        err[t * p.block + i] = e;
      }
    }
    // Lazy update of the columns after the block: row[j] -= e[k] *
    // U[i1 + k][j] for j >= i2, k rising, for the whole tile at once.
    support::SubtractProducts(rows.data() + i2, cols, err.data(), p.block,
                               p.strips.data() + p.strip_offset[bi],
                               count * support::kStripWidth, nr, count,
                               cols - i2);
  }
  for (int64_t t = 0; t < nr; ++t) rounder.Finish(t);
}

// H = 2 X^T X / n with dead columns, the act-order permutation and
// damping; then U. Fills every Plan field but scheme/group/static_grids.
absl::Status BuildPlan(int64_t cols, const std::vector<double>& xtx, uint64_t n,
                       const GptqOptions& options, Plan* p, GptqStats* stats) {
  p->cols = cols;
  p->block = options.block_size;
  support::LargeArray<double> h(xtx.size());
  const double f = 2.0 / static_cast<double>(n);
  for (size_t i = 0; i < xtx.size(); ++i) h[i] = xtx[i] * f;
  p->dead.assign(static_cast<size_t>(cols), 0);
  for (int64_t i = 0; i < cols; ++i) {
    if (h[i * cols + i] == 0) {
      p->dead[i] = 1;
      h[i * cols + i] = 1;
      ++stats->dead_columns;
    }
  }
  p->perm.resize(static_cast<size_t>(cols));
  std::iota(p->perm.begin(), p->perm.end(), 0);
  if (options.act_order) {
    std::stable_sort(p->perm.begin(), p->perm.end(), [&](int64_t a, int64_t b) {
      return h[a * cols + a] > h[b * cols + b];
    });
    support::LargeArray<double> hp(h.size());
    for (int64_t i = 0; i < cols; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        hp[i * cols + j] = h[p->perm[i] * cols + p->perm[j]];
      }
    }
    h.swap(hp);
  }
  double mean_diag = 0;
  for (int64_t i = 0; i < cols; ++i) mean_diag += h[i * cols + i];
  mean_diag /= static_cast<double>(cols);
  stats->damp = options.percdamp * mean_diag;
  for (int64_t i = 0; i < cols; ++i) h[i * cols + i] += stats->damp;
  support::LargeArray<double> u(h.size());
  const int64_t bad = internal::UpperCholeskyOfInverse(h.data(), cols, u.data(), options.threads);
  if (bad >= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "GPTQ: Hessian (", cols, "x", cols, ", ", n, " calibration rows) is "
        "not positive definite after damping ", options.percdamp,
        " x mean diagonal (= ", stats->damp, "); pivot at processing position ",
        bad, " (column ", p->perm[bad], ") failed; raise percdamp or "
        "calibrate on more data"));
  }
  h.clear();
  h.shrink_to_fit();
  SplitU(u, p);
  return absl::OkStatus();
}

// Runs every tile of `rows` rows; make_rounder(r0, nr) gives a tile's
// Rounder. Tiles are handed out round-robin; each row's result is
// independent of which thread or tile computes it. The first failing
// tile's status (in tile order) is returned.
template <typename MakeRounder>
absl::Status RunTiles(const Plan& p, const float* w, int64_t rows, int threads,
                      MakeRounder make_rounder, GptqStats* stats) {
  std::vector<double> losses(static_cast<size_t>(rows));
  const int64_t tile_rows = TileRows(rows, threads);
  const int64_t ntiles = (rows + tile_rows - 1) / tile_rows;
  const int64_t nthreads = std::max<int64_t>(1, std::min<int64_t>(threads, ntiles));
  std::vector<absl::Status> tile_status(static_cast<size_t>(ntiles));
  auto work = [&](int64_t t) {
    TileScratch scratch;
    for (int64_t tile = t; tile < ntiles; tile += nthreads) {
      const int64_t r0 = tile * tile_rows, nr = std::min(tile_rows, rows - r0);
      auto rounder = make_rounder(r0, nr);
      QuantizeTile(p, w, r0, nr, rounder, scratch, losses.data() + r0);
      tile_status[tile] = rounder.status();
    }
  };
  // Tiles of a thread the system refuses run on this one: same results.
  support::RunOnThreads(nthreads, work);
  for (const absl::Status& s : tile_status) {
    if (!s.ok()) return s;
  }
  for (double l : losses) stats->proxy_loss += l;  // row order: deterministic
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<QuantizedMatrix> QuantizeGptq(const float* w, int64_t rows,
                                             int64_t cols, const Scheme& scheme,
                                             const std::vector<double>& xtx,
                                             uint64_t n,
                                             const GptqOptions& options) {
  if (absl::Status s = Validate(w, rows, cols, xtx, n, options); !s.ok()) return s;
  if (absl::Status s = ValidateScheme(scheme, cols); !s.ok()) return s;
  Plan p;
  p.scheme = scheme;
  p.group = EffectiveGroupSize(scheme, cols);
  p.ngroups = NumGroups(scheme, cols);
  p.static_grids = options.static_groups || options.act_order || p.ngroups == 1;
  GptqStats stats;
  if (absl::Status s = BuildPlan(cols, xtx, n, options, &p, &stats); !s.ok()) return s;

  QuantizedMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.scheme = scheme;
  m.q.resize(static_cast<size_t>(rows * cols));
  m.scale.resize(static_cast<size_t>(rows * p.ngroups));
  if (!scheme.symmetric) m.zero.resize(m.scale.size());
  if (absl::Status s = RunTiles(
          p, w, rows, options.threads,
          [&](int64_t r0, int64_t nr) { return SchemeRounder(p, r0, nr, &m); }, &stats);
      !s.ok()) {
    return s;
  }
  if (options.stats) *options.stats = stats;
  return m;
}

absl::Status QuantizeGptqOnGrid(const float* w, int64_t rows, int64_t cols,
                                const std::vector<double>& xtx, uint64_t n,
                                const GptqOptions& options, GptqGrid& grid) {
  if (absl::Status s = Validate(w, rows, cols, xtx, n, options); !s.ok()) return s;
  if (options.act_order || options.static_groups) {
    return absl::InvalidArgumentError(
        "GPTQ on a caller's grid: act-order and static groups are not supported (the grid "
        "fixes each block from the weights GPTQ has updated, in column order)");
  }
  if (grid.block() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("GPTQ on a caller's grid: block of ", grid.block(), " columns"));
  }
  Plan p;
  GptqStats stats;
  if (absl::Status s = BuildPlan(cols, xtx, n, options, &p, &stats); !s.ok()) return s;
  if (absl::Status s = RunTiles(
          p, w, rows, options.threads,
          [&](int64_t r0, int64_t) { return CallerGridRounder(p, r0, grid); }, &stats);
      !s.ok()) {
    return s;
  }
  if (options.stats) *options.stats = stats;
  return absl::OkStatus();
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
