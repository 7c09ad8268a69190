// Linear-layer statistics: X^T X, mean |x| and mean x^2 against a direct
// computation; Gemm transA/transB; layer discovery.
#include "calibration/linear_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/calibration/test_data.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::calibration {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

LinearLayer Layer(int64_t k, bool trans_a = false) {
  LinearLayer l;
  l.node = "fc";
  l.op_type = trans_a ? "Gemm" : "MatMul";
  l.input = "x";
  l.weight = "w";
  l.in_features = k;
  l.trans_a = trans_a;
  return l;
}

TEST(LinearStatsTest, XtXAndMeansEqualDirectComputation) {
  constexpr int64_t kRows = 5, kK = 7;
  const std::vector<float> x = test_data::Gaussian(kRows * kK, 3);
  LinearStatsAccumulator acc(Layer(kK), /*hessian=*/true);
  // Two runs of different rank: rows 0-2 as [1,3,K], rows 3-4 as [2,K].
  ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>({1, 3, kK}, {x.begin(), x.begin() + 3 * kK})), IsOk());
  ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>({2, kK}, {x.begin() + 3 * kK, x.end()})), IsOk());
  EXPECT_EQ(acc.rows(), 5u);
  const std::vector<double> xtx = acc.XtX();
  ASSERT_EQ(xtx.size(), static_cast<size_t>(kK * kK));
  for (int64_t i = 0; i < kK; ++i) {
    double abs_sum = 0, sq_sum = 0;
    for (int64_t r = 0; r < kRows; ++r) {
      abs_sum += std::fabs(double{x[r * kK + i]});
      sq_sum += double{x[r * kK + i]} * x[r * kK + i];
    }
    EXPECT_DOUBLE_EQ(acc.MeanAbs()[i], abs_sum / kRows);
    EXPECT_DOUBLE_EQ(acc.MeanSquare()[i], sq_sum / kRows);
    for (int64_t j = 0; j < kK; ++j) {
      double direct = 0;
      for (int64_t r = 0; r < kRows; ++r) direct += double{x[r * kK + i]} * x[r * kK + j];
      EXPECT_DOUBLE_EQ(xtx[i * kK + j], direct) << i << "," << j;
    }
  }
}

// Rows go into X^T X in batches of 64 through a blocked kernel; every entry
// must still be the row-order sum of x_r[i] * x_r[j], bit for bit, across
// batch boundaries, Add() calls, 8-row bands and a ragged last band.
TEST(LinearStatsTest, BatchedXtXHasTheBitsOfTheRowOrderSum) {
  constexpr int64_t kRows = 150, kK = 37;
  const std::vector<float> x = test_data::Gaussian(kRows * kK, 11);
  LinearStatsAccumulator acc(Layer(kK), /*hessian=*/true);
  constexpr int64_t kFirst = 70;  // splits the second batch across calls
  ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>(
                  {kFirst, kK}, {x.begin(), x.begin() + kFirst * kK})),
              IsOk());
  ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>(
                  {kRows - kFirst, kK}, {x.begin() + kFirst * kK, x.end()})),
              IsOk());
  const std::vector<double> xtx = acc.XtX();
  int64_t differ = 0;
  for (int64_t i = 0; i < kK; ++i) {
    for (int64_t j = 0; j < kK; ++j) {
      const int64_t a = std::min(i, j), b = std::max(i, j);
      double direct = 0;
      for (int64_t r = 0; r < kRows; ++r) {
        direct += double{x[r * kK + a]} * double{x[r * kK + b]};
      }
      if (xtx[i * kK + j] != direct && ++differ <= 5) {
        ADD_FAILURE() << "(" << i << ", " << j << "): " << xtx[i * kK + j]
                      << " vs row-order sum " << direct;
      }
    }
  }
  EXPECT_EQ(differ, 0);
}

// With a thread pool, features and bands of X^T X are split across threads
// and rows go in chunks of up to 512 (448 for K = 520, whose scratch would
// pass 4 MiB): every statistic must keep the bits of the row-order sums for
// any pool size, ragged K (a partial last strip), transA's column reads,
// and rows crossing batch and chunk boundaries.
TEST(LinearStatsTest, PooledAddHasTheBitsOfTheRowOrderSums) {
  constexpr int64_t kRows = 1100;
  for (const int64_t k : {int64_t{37}, int64_t{64}, int64_t{203}, int64_t{520}}) {
    const std::vector<float> x = test_data::Gaussian(kRows * k, static_cast<uint64_t>(k));
    std::vector<double> xtx_direct(static_cast<size_t>(k * k)), abs_direct(k), sq_direct(k);
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t r = 0; r < kRows; ++r) {
        const double v = x[r * k + i];
        abs_direct[i] += std::fabs(v);
        sq_direct[i] += v * v;
      }
      for (int64_t j = 0; j < k; ++j) {
        const int64_t a = std::min(i, j), b = std::max(i, j);
        double sum = 0;
        for (int64_t r = 0; r < kRows; ++r) sum += double{x[r * k + a]} * double{x[r * k + b]};
        xtx_direct[i * k + j] = sum;
      }
    }
    for (double& v : abs_direct) v /= kRows;
    for (double& v : sq_direct) v /= kRows;
    for (const bool trans_a : {false, true}) {
      std::vector<float> stored = x;
      if (trans_a) {  // [K, M]
        for (int64_t r = 0; r < kRows; ++r) {
          for (int64_t i = 0; i < k; ++i) stored[i * kRows + r] = x[r * k + i];
        }
      }
      for (const int threads : {0, 1, 2, 3}) {
        SCOPED_TRACE("K " + std::to_string(k) + (trans_a ? " transA" : "") + ", " +
                     std::to_string(threads) + " threads");
        std::unique_ptr<runtime::ThreadPool> pool;
        if (threads > 0) pool = std::make_unique<runtime::ThreadPool>(threads);
        LinearStatsAccumulator acc(Layer(k, trans_a), /*hessian=*/true);
        // Two calls, the first ending inside a batch.
        const int64_t first = 600;
        if (trans_a) {
          ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>({k, kRows}, stored),
                              pool.get()),
                      IsOk());
        } else {
          ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>(
                                  {first, k}, {stored.begin(), stored.begin() + first * k}),
                              pool.get()),
                      IsOk());
          ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>(
                                  {kRows - first, k}, {stored.begin() + first * k, stored.end()}),
                              pool.get()),
                      IsOk());
        }
        EXPECT_EQ(acc.rows(), static_cast<uint64_t>(kRows));
        EXPECT_EQ(acc.MeanAbs(), abs_direct);
        EXPECT_EQ(acc.MeanSquare(), sq_direct);
        const std::vector<double> xtx = acc.XtX();
        int64_t differ = 0;
        for (size_t e = 0; e < xtx.size(); ++e) differ += xtx[e] != xtx_direct[e];
        EXPECT_EQ(differ, 0);
      }
    }
  }
}

// Without a Hessian only the per-column sums are gathered (no batch
// buffers): the same means at any pool size.
TEST(LinearStatsTest, PooledMeansWithoutHessian) {
  constexpr int64_t kRows = 700, kK = 45;
  const std::vector<float> x = test_data::Gaussian(kRows * kK, 9);
  std::vector<double> abs_direct(kK), sq_direct(kK);
  for (int64_t i = 0; i < kK; ++i) {
    for (int64_t r = 0; r < kRows; ++r) {
      const double v = x[r * kK + i];
      abs_direct[i] += std::fabs(v);
      sq_direct[i] += v * v;
    }
    abs_direct[i] /= kRows;
    sq_direct[i] /= kRows;
  }
  for (const int threads : {1, 2}) {
    runtime::ThreadPool pool(threads);
    LinearStatsAccumulator acc(Layer(kK), /*hessian=*/false);
    ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>({kRows, kK}, x), &pool), IsOk());
    EXPECT_EQ(acc.MeanAbs(), abs_direct) << threads << " threads";
    EXPECT_EQ(acc.MeanSquare(), sq_direct) << threads << " threads";
    EXPECT_TRUE(acc.XtX().empty());
  }
}

// A non-finite input is refused whole: no statistic moves.
TEST(LinearStatsTest, NonFiniteInputWithAPoolAddsNothing) {
  runtime::ThreadPool pool(2);
  LinearStatsAccumulator acc(Layer(16), /*hessian=*/true);
  std::vector<float> x = test_data::Gaussian(100 * 16, 5);
  ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>({100, 16}, x), &pool), IsOk());
  const std::vector<double> before = acc.XtX(), abs_before = acc.MeanAbs();
  x[77 * 16 + 3] = std::numeric_limits<float>::infinity();
  EXPECT_THAT(acc.Add(runtime::RtTensor::FromVector<float>({100, 16}, x), &pool),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 NaN/Inf values")));
  EXPECT_EQ(acc.rows(), 100u);
  EXPECT_EQ(acc.XtX(), before);
  EXPECT_EQ(acc.MeanAbs(), abs_before);
}

TEST(LinearStatsTest, TransAReadsColumns) {
  // X stored [K=2, M=3]: rows of the logical X are (1,4), (2,5), (3,6).
  LinearStatsAccumulator acc(Layer(2, /*trans_a=*/true), true);
  ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6})), IsOk());
  EXPECT_EQ(acc.rows(), 3u);
  EXPECT_EQ(acc.XtX(), (std::vector<double>{1 + 4 + 9, 4 + 10 + 18, 4 + 10 + 18, 16 + 25 + 36}));
}

TEST(LinearStatsTest, NoHessianUnlessAsked) {
  LinearStatsAccumulator acc(Layer(2), false);
  ASSERT_THAT(acc.Add(runtime::RtTensor::FromVector<float>({1, 2}, {1, -3})), IsOk());
  EXPECT_TRUE(acc.XtX().empty());
  EXPECT_EQ(acc.MeanAbs(), (std::vector<double>{1, 3}));
}

TEST(LinearStatsTest, WrongFeatureDimNamesNode) {
  LinearStatsAccumulator acc(Layer(4), false);
  EXPECT_THAT(acc.Add(runtime::RtTensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("linear node 'fc': input 'x' is f32[2,3], expected feature dim 4")));
}

TEST(LinearStatsTest, NonFiniteInputNamesNodeAndCount) {
  LinearStatsAccumulator acc(Layer(2), true);
  EXPECT_THAT(acc.Add(runtime::RtTensor::FromVector<float>({2, 2}, {1, INFINITY, NAN, 4})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("linear node 'fc': input 'x' holds 2 NaN/Inf values of 4")));
  EXPECT_EQ(acc.rows(), 0u);  // nothing half-added
}

ir::Tensor Weight(std::string name, std::vector<int64_t> dims) {
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = ir::DType::kF32;
  t.dims = dims;
  t.data = ir::TensorData::Owned(std::vector<uint8_t>(4 * dims[0] * dims[1], 0));
  return t;
}

TEST(LinearStatsTest, FindsMatMulAndGemmWithConstantWeights) {
  ir::Graph g;
  ASSERT_THAT(g.AddInitializer(Weight("w1", {8, 4})), IsOk());
  ASSERT_THAT(g.AddInitializer(Weight("w2", {3, 4})), IsOk());
  ir::Node mm{"mm", "MatMul", "", {"x", "w1"}, {"y"}, {}, {}};
  ir::Node act{"mm2", "MatMul", "", {"x", "y"}, {"z"}, {}, {}};  // no constant weight
  ir::Node gemm{"gemm", "Gemm", "", {"y", "w2"}, {"out"}, {}, {}};
  gemm.attributes["transB"] = ir::Attribute::Int(1);
  g.nodes = {mm, act, gemm};
  const std::vector<LinearLayer> layers = FindLinearLayers(g);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].node, "mm");
  EXPECT_EQ(layers[0].in_features, 8);
  EXPECT_EQ(layers[1].node, "gemm");
  EXPECT_EQ(layers[1].input, "y");
  EXPECT_EQ(layers[1].in_features, 4);  // transB: weight is [N, K]
}

}  // namespace
}  // namespace slimpack::calibration
