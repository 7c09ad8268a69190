// GPTQ against the NumPy reference fixture (scripts/fixtures/
// gptq_reference.py -> tests/testdata/quant/gptq_fixture.npz), plus the
// properties GPTQ must have on its own.
#include "quantize/numerics/gptq.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "formats/numpy/numpy_io.h"
#include "gmock/gmock.h"
#include "ir/float_convert.h"
#include "gtest/gtest.h"
#include "quantize/numerics/error_stats.h"
#include "quantize/numerics/linalg.h"
#include "quantize/numerics/rtn.h"
#include "support/threads.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::quant {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

template <typename T>
std::vector<T> Values(const ir::Tensor& t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(T));
  return v;
}

class GptqFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tensors = numpy::ReadNpz(std::string(SLIMPACK_SOURCE_DIR) +
                                  "/tests/testdata/quant/gptq_fixture.npz");
    ASSERT_THAT(tensors, IsOk());
    for (ir::Tensor& t : *tensors) by_name_[t.name] = std::move(t);
    const ir::Tensor& w = by_name_.at("w");
    ASSERT_EQ(w.dims.size(), 2u);
    rows_ = w.dims[0];
    cols_ = w.dims[1];
    w_ = Values<float>(w);
    xtx_ = Values<double>(by_name_.at("xtx"));
    n_ = static_cast<uint64_t>(Values<int64_t>(by_name_.at("n"))[0]);
    const std::vector<int64_t> params = Values<int64_t>(by_name_.at("params"));
    group_ = params[0];
    block_ = params[1];
  }
  const ir::Tensor& Get(const std::string& name) { return by_name_.at(name); }

  std::map<std::string, ir::Tensor> by_name_;
  int64_t rows_ = 0, cols_ = 0, group_ = 0, block_ = 0;
  uint64_t n_ = 0;
  std::vector<float> w_;
  std::vector<double> xtx_;
};

struct Variant {
  const char* tag;
  bool sym;
  bool act_order;
};
constexpr Variant kVariants[] = {{"sym", true, false},
                                 {"sym_act", true, true},
                                 {"asym", false, false},
                                 {"asym_act", false, true}};

// Codes equal the NumPy reference's exactly (both update the weights in
// double in the same column order; a difference would mean a different
// algorithm, not rounding); scales within 1e-5 relative.
TEST_F(GptqFixture, MatchesNumpyReference) {
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(v.tag);
    GptqOptions o;
    o.block_size = block_;
    o.act_order = v.act_order;
    auto m = QuantizeGptq(w_.data(), rows_, cols_, Scheme{4, group_, v.sym},
                          xtx_, n_, o);
    ASSERT_THAT(m, IsOk());
    const std::string tag = v.tag;
    const std::vector<int8_t> q = Values<int8_t>(Get(tag + "_q"));
    const std::vector<float> s = Values<float>(Get(tag + "_scale"));
    ASSERT_EQ(q.size(), m->q.size());
    ASSERT_EQ(s.size(), m->scale.size());
    int64_t mismatches = 0;
    for (size_t i = 0; i < q.size(); ++i) {
      if (q[i] != m->q[i] && ++mismatches <= 5) {
        ADD_FAILURE() << "code " << i << ": numpy " << int{q[i]} << ", ours " << int{m->q[i]};
      }
    }
    EXPECT_EQ(mismatches, 0);
    for (size_t i = 0; i < s.size(); ++i) {
      EXPECT_NEAR(m->scale[i], s[i], 1e-5 * std::abs(s[i])) << i;
    }
    std::vector<int8_t> z;
    if (!v.sym) {
      z = Values<int8_t>(Get(tag + "_zero"));
      int64_t zmis = 0;
      for (size_t i = 0; i < z.size(); ++i) zmis += z[i] != m->zero[i];
      EXPECT_LE(zmis, 1);
    }
    // Dequantized weights: the reference's codes/scales through the spec
    // formula vs ours, within 1 % relative L2.
    QuantizedMatrix ref = *m;
    ref.q = q;
    ref.scale = s;
    ref.zero = z;
    std::vector<float> dref(w_.size()), dm(w_.size());
    Dequantize(ref, dref.data());
    Dequantize(*m, dm.data());
    EXPECT_LE(RelativeL2(dref.data(), dm.data(), rows_ * cols_), 0.01);
  }
}

// GPTQ minimises the layer output error ||X W^T - X W_hat^T||^2, which RTN
// ignores; on correlated inputs with outlier channels it must win clearly.
TEST_F(GptqFixture, LowerOutputErrorThanRtn) {
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(v.tag);
    const Scheme scheme{4, group_, v.sym};
    GptqOptions o;
    o.block_size = block_;
    o.act_order = v.act_order;
    auto g = QuantizeGptq(w_.data(), rows_, cols_, scheme, xtx_, n_, o);
    auto r = QuantizeRtn(w_.data(), rows_, cols_, scheme, RtnOptions{});
    ASSERT_THAT(g, IsOk());
    ASSERT_THAT(r, IsOk());
    std::vector<float> dg(w_.size()), dr(w_.size());
    Dequantize(*g, dg.data());
    Dequantize(*r, dr.data());
    const double eg = OutputError(w_.data(), dg.data(), rows_, cols_, xtx_);
    const double er = OutputError(w_.data(), dr.data(), rows_, cols_, xtx_);
    EXPECT_LT(eg, 0.8 * er) << "gptq " << eg << " rtn " << er;
  }
}

// On an f16-scale scheme GPTQ's error feedback runs on the stored grid:
// every scale is an f16 value (pack.h refuses others) and the output error
// stays within 2 % of the f32-scale run.
TEST_F(GptqFixture, F16ScaleGridsAreStoredGrids) {
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(v.tag);
    GptqOptions o;
    o.block_size = block_;
    o.act_order = v.act_order;
    const Scheme f32{4, group_, v.sym};
    const Scheme f16{4, group_, v.sym, ScaleDType::kF16};
    auto a = QuantizeGptq(w_.data(), rows_, cols_, f32, xtx_, n_, o);
    auto b = QuantizeGptq(w_.data(), rows_, cols_, f16, xtx_, n_, o);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    for (float sc : b->scale) ASSERT_EQ(ir::F16ToF32(ir::F32ToF16(sc)), sc);
    std::vector<float> da(w_.size()), db(w_.size());
    Dequantize(*a, da.data());
    Dequantize(*b, db.data());
    const double ea = OutputError(w_.data(), da.data(), rows_, cols_, xtx_);
    const double eb = OutputError(w_.data(), db.data(), rows_, cols_, xtx_);
    EXPECT_LE(eb, ea * 1.02) << "f32 " << ea << " f16 " << eb;
  }
}

// Static groups: with act-order the grids come from the original W (dead
// column zeroed), so they equal RTN's grids on that matrix exactly.
TEST_F(GptqFixture, ActOrderUsesStaticGroupsOfOriginalOrder) {
  std::vector<float> w = w_;
  GptqStats stats;
  GptqOptions o;
  o.act_order = true;
  o.stats = &stats;
  auto g = QuantizeGptq(w.data(), rows_, cols_, Scheme{4, group_, false},
                        xtx_, n_, o);
  ASSERT_THAT(g, IsOk());
  ASSERT_EQ(stats.dead_columns, 1);  // the fixture zeroes input feature 13
  for (int64_t r = 0; r < rows_; ++r) w[r * cols_ + 13] = 0.0f;
  auto rtn = QuantizeRtn(w.data(), rows_, cols_, Scheme{4, group_, false},
                         RtnOptions{});
  ASSERT_THAT(rtn, IsOk());
  EXPECT_EQ(g->scale, rtn->scale);
  EXPECT_EQ(g->zero, rtn->zero);
  // The dead column dequantizes to exactly 0.
  std::vector<float> d(w.size());
  Dequantize(*g, d.data());
  for (int64_t r = 0; r < rows_; ++r) EXPECT_EQ(d[r * cols_ + 13], 0.0f);
}

// 100 rows span several row tiles (two of 64 rows on one thread, three of
// 40 on three), so threads really split the work and tilings differ.
TEST_F(GptqFixture, ResultIndependentOfThreadCount) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(100 * cols_));
  for (float& x : w) x = nd(rng);
  for (bool act : {false, true}) {
    GptqOptions o;
    o.act_order = act;
    auto a = QuantizeGptq(w.data(), 100, cols_, Scheme{4, group_, false}, xtx_,
                          n_, o);
    o.threads = 3;
    auto b = QuantizeGptq(w.data(), 100, cols_, Scheme{4, group_, false}, xtx_,
                          n_, o);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    EXPECT_EQ(a->q, b->q);
    EXPECT_EQ(a->scale, b->scale);
    EXPECT_EQ(a->zero, b->zero);
    // 64 threads of which the system (here support/threads.h's test hook)
    // starts one: the refused threads' tiles run on the caller, same bytes.
    GptqOptions refused = o;
    refused.threads = 64;
    support::LimitThreadStartsForTesting(1);
    auto c = QuantizeGptq(w.data(), 100, cols_, Scheme{4, group_, false}, xtx_,
                          n_, refused);
    support::LimitThreadStartsForTesting(-1);
    ASSERT_THAT(c, IsOk());
    EXPECT_EQ(a->q, c->q);
    EXPECT_EQ(a->scale, c->scale);
    EXPECT_EQ(a->zero, c->zero);
    // Rows are independent: rows 70..72 (inside the second tile of either
    // tiling) alone give the
    // same codes and grids as inside the 100-row run.
    auto part = QuantizeGptq(w.data() + 70 * cols_, 3, cols_,
                             Scheme{4, group_, false}, xtx_, n_, o);
    ASSERT_THAT(part, IsOk());
    const int64_t ng = part->num_groups();
    EXPECT_TRUE(std::equal(part->q.begin(), part->q.end(),
                           a->q.begin() + 70 * cols_));
    EXPECT_TRUE(std::equal(part->scale.begin(), part->scale.end(),
                           a->scale.begin() + 70 * ng));
    EXPECT_TRUE(std::equal(part->zero.begin(), part->zero.end(),
                           a->zero.begin() + 70 * ng));
  }
}

// Scheme's own group grid behind the GptqGrid interface, per-row state as
// the interface asks; `fail_row` makes Fix fail there.
class SchemeAsCallerGrid : public GptqGrid {
 public:
  SchemeAsCallerGrid(int64_t rows, int64_t cols, Scheme s, int64_t fail_row = -1)
      : s_(s), cols_(cols), group_(s.group_size), fail_row_(fail_row),
        grids_(static_cast<size_t>(rows * (cols / s.group_size))),
        q(static_cast<size_t>(rows * cols)) {}
  int64_t block() const override { return group_; }
  absl::Status Fix(int64_t row, int64_t c0, const float* v, int64_t len) override {
    if (row == fail_row_) return absl::InternalError(absl::StrCat("no grid for row ", row));
    const auto [mn, mx] = std::minmax_element(v, v + len);
    grids_[row * (cols_ / group_) + c0 / group_] = MakeGrid(*mn, *mx, 1.0f, s_.bits, s_.symmetric);
    return absl::OkStatus();
  }
  float Round(int64_t row, int64_t col, float v) override {
    const GroupGrid& g = grids_[row * (cols_ / group_) + col / group_];
    const int32_t code = QuantizeValue(v, g);
    q[row * cols_ + col] = static_cast<int8_t>(code);
    return DequantizeCode(code, g);
  }

 private:
  Scheme s_;
  int64_t cols_, group_, fail_row_;
  std::vector<GroupGrid> grids_;

 public:
  std::vector<int8_t> q;
};

// With lazy blocks one group wide, a group's grid is fixed at a block start
// where both paths see the same weights: GPTQ on a caller's grid is then
// GPTQ, code for code, whatever the thread count.
TEST_F(GptqFixture, CallerGridMatchesSchemeGridCodeForCode) {
  for (bool sym : {true, false}) {
    SCOPED_TRACE(sym ? "sym" : "asym");
    const Scheme scheme{4, group_, sym};
    GptqOptions o;
    o.block_size = group_;
    GptqStats want_stats, got_stats;
    o.stats = &want_stats;
    auto want = QuantizeGptq(w_.data(), rows_, cols_, scheme, xtx_, n_, o);
    ASSERT_THAT(want, IsOk());
    for (int threads : {1, 3}) {
      o.threads = threads;
      o.stats = &got_stats;
      SchemeAsCallerGrid grid(rows_, cols_, scheme);
      ASSERT_THAT(QuantizeGptqOnGrid(w_.data(), rows_, cols_, xtx_, n_, o, grid), IsOk());
      EXPECT_EQ(grid.q, want->q);
      EXPECT_EQ(got_stats.proxy_loss, want_stats.proxy_loss);
    }
  }
}

TEST_F(GptqFixture, CallerGridErrorsAreReturned) {
  SchemeAsCallerGrid failing(rows_, cols_, Scheme{4, group_, true}, /*fail_row=*/rows_ - 1);
  EXPECT_THAT(QuantizeGptqOnGrid(w_.data(), rows_, cols_, xtx_, n_, GptqOptions{}, failing),
              StatusIs(absl::StatusCode::kInternal, HasSubstr(absl::StrCat("row ", rows_ - 1))));
  GptqOptions act;
  act.act_order = true;
  SchemeAsCallerGrid grid(rows_, cols_, Scheme{4, group_, true});
  EXPECT_THAT(QuantizeGptqOnGrid(w_.data(), rows_, cols_, xtx_, n_, act, grid),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("act-order")));
}

TEST(GptqTest, RejectsBadInputs) {
  const std::vector<float> w(2 * 4, 0.5f);
  std::vector<double> xtx(16, 0.0);
  for (int i = 0; i < 4; ++i) xtx[i * 4 + i] = 1.0;
  EXPECT_THAT(QuantizeGptq(w.data(), 2, 4, Scheme{}, std::vector<double>(9),
                           10, GptqOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("9 entries, expected 4^2")));
  EXPECT_THAT(QuantizeGptq(w.data(), 2, 4, Scheme{}, xtx, 0, GptqOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n = 0")));
  std::vector<double> asym = xtx;
  asym[1] = 0.5;
  EXPECT_THAT(QuantizeGptq(w.data(), 2, 4, Scheme{}, asym, 10, GptqOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("entry (0, 1)")));
  // An indefinite "X^T X" (impossible from real data) must fail cleanly.
  std::vector<double> indef = xtx;
  indef[0] = 1.0;
  indef[1] = indef[4] = 3.0;
  indef[5] = 1.0;
  EXPECT_THAT(QuantizeGptq(w.data(), 2, 4, Scheme{}, indef, 10,
                           GptqOptions{}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("(4x4, 10 calibration rows) is not positive "
                                 "definite after damping 0.01")));
  std::vector<float> bad = w;
  bad[5] = NAN;
  EXPECT_THAT(QuantizeGptq(bad.data(), 2, 4, Scheme{}, xtx, 10, GptqOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("row 1 col 1")));
}

// U^T U == A^-1 across several 64-wide blocks (sizes not multiples of 64).
TEST(GptqLinalgTest, UpperCholeskyOfInverse) {
  for (int64_t n : {1, 5, 64, 150}) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::normal_distribution<double> d;
    std::vector<double> b(static_cast<size_t>(n * n)), a(b.size());
    for (double& x : b) x = d(rng);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = i == j ? 0.5 * n : 0.0;
        for (int64_t k = 0; k < n; ++k) s += b[i * n + k] * b[j * n + k];
        a[i * n + j] = s;
      }
    }
    // NaN-filled: the lower triangle's zeros must be written.
    std::vector<double> work = a, u(a.size(), std::nan(""));
    ASSERT_EQ(internal::UpperCholeskyOfInverse(work.data(), n, u.data()), -1);
    // (U^T U) A == I, and U is upper triangular with a positive diagonal.
    std::vector<double> inv(a.size(), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_GT(u[i * n + i], 0);
      for (int64_t j = 0; j < i; ++j) EXPECT_EQ(u[i * n + j], 0.0);
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t l = 0; l <= std::min(i, k); ++l) {
          inv[i * n + k] += u[l * n + i] * u[l * n + k];
        }
      }
    }
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t k = 0; k < n; ++k) s += inv[i * n + k] * a[k * n + j];
        worst = std::max(worst, std::fabs(s - (i == j ? 1.0 : 0.0)));
      }
    }
    EXPECT_LT(worst, 1e-9) << n;
  }
}

// The factorisation shares its trailing updates and inverse panels out over
// threads: 700 columns make trailing updates above the threading cut-off
// (256 rows) and 11 inverse panels; every thread count gives the same bits.
TEST(GptqLinalgTest, UpperCholeskyOfInverseIsBitIdenticalAcrossThreadCounts) {
  const int64_t n = 700;
  std::mt19937 rng(7);
  std::normal_distribution<double> d;
  std::vector<double> b(static_cast<size_t>(n * 40));
  for (double& x : b) x = d(rng);
  std::vector<double> a(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = i == j ? 1.0 : 0.0;
      for (int64_t k = 0; k < 40; ++k) s += b[i * 40 + k] * b[j * 40 + k];
      a[i * n + j] = s;
    }
  }
  std::vector<double> work = a, u1(a.size(), std::nan(""));
  ASSERT_EQ(internal::UpperCholeskyOfInverse(work.data(), n, u1.data(), 1), -1);
  for (int threads : {2, 3, 8}) {
    std::vector<double> w = a, u(a.size(), std::nan(""));
    ASSERT_EQ(internal::UpperCholeskyOfInverse(w.data(), n, u.data(), threads), -1);
    ASSERT_EQ(u.size(), u1.size());
    EXPECT_EQ(std::memcmp(u.data(), u1.data(), u.size() * sizeof(double)), 0) << threads;
  }
  // And it is the factor: (U^T U) A == I on a few columns.
  double worst = 0;
  for (int64_t c : {0, 1, 350, 699}) {
    std::vector<double> col(static_cast<size_t>(n), 0.0);  // A e_c
    for (int64_t k = 0; k < n; ++k) col[k] = a[k * n + c];
    std::vector<double> uc(static_cast<size_t>(n), 0.0);  // U A e_c
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = i; k < n; ++k) uc[i] += u1[i * n + k] * col[k];
    }
    for (int64_t i = 0; i < n; ++i) {  // U^T (U A e_c)
      double s = 0;
      for (int64_t k = 0; k <= i; ++k) s += u1[k * n + i] * uc[k];
      worst = std::max(worst, std::fabs(s - (i == c ? 1.0 : 0.0)));
    }
  }
  EXPECT_LT(worst, 1e-9);
}

}  // namespace
}  // namespace slimpack::quant
