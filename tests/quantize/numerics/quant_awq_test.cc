// AWQ scale search on synthetic inputs with outlier channels.
#include "quantize/numerics/awq.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "quantize/numerics/rtn.h"
#include "support/threads.h"
#include "tests/quantize/numerics/quant_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::quant {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

struct Data {
  int64_t cols = 128, n = 192;
  std::vector<float> x, w1, w2, mean_abs;
};

// Inputs N(0,1) with 4 salient channels scaled by 25 (the outlier channels
// AWQ was designed for); weights N(0, 0.02).
Data MakeData() {
  Data d;
  d.x = testing::Gaussian(d.n * d.cols, 21);
  for (int64_t i = 0; i < d.n; ++i) {
    for (int64_t c : {3, 50, 51, 120}) d.x[i * d.cols + c] *= 25.0f;
  }
  d.w1 = testing::Gaussian(48 * d.cols, 22, 0.02f);
  d.w2 = testing::Gaussian(32 * d.cols, 23, 0.02f);
  d.mean_abs.assign(static_cast<size_t>(d.cols), 0.0f);
  for (int64_t c = 0; c < d.cols; ++c) {
    double s = 0;
    for (int64_t i = 0; i < d.n; ++i) s += std::fabs(d.x[i * d.cols + c]);
    d.mean_abs[c] = static_cast<float>(s / d.n);
  }
  return d;
}

// ||X W^T - X W_hat^T||^2 computed directly, for an independent check.
double Err(const Data& d, const std::vector<float>& w,
           const std::vector<float>& w_hat, int64_t rows) {
  double e = 0;
  for (int64_t i = 0; i < d.n; ++i) {
    for (int64_t r = 0; r < rows; ++r) {
      double y = 0, yh = 0;
      for (int64_t c = 0; c < d.cols; ++c) {
        y += static_cast<double>(d.x[i * d.cols + c]) * w[r * d.cols + c];
        yh += static_cast<double>(d.x[i * d.cols + c]) * w_hat[r * d.cols + c];
      }
      e += (y - yh) * (y - yh);
    }
  }
  return e;
}

TEST(QuantAwqTest, BeatsRtnOnOutlierChannels) {
  const Data d = MakeData();
  for (bool sym : {true, false}) {
    const Scheme scheme{4, 32, sym};
    auto res = SearchAwqScales({{d.w1.data(), 48}, {d.w2.data(), 32}}, d.cols,
                               d.x.data(), d.n, d.mean_abs, scheme,
                               AwqOptions{});
    ASSERT_THAT(res, IsOk());
    // Protecting the salient channels must at least halve the output error
    // (measured: about 4x lower).
    EXPECT_GT(res->alpha, 0.0f);
    EXPECT_LT(res->error_after, 0.5 * res->error_before) << scheme.ToString();
    ASSERT_EQ(res->errors.size(), 20u);
    ASSERT_EQ(res->quantized.size(), 2u);
    // error_after really is the error of the returned quantization:
    // W_hat = deq(Q(W diag(s))) / s, checked independently.
    double e = 0;
    int64_t rows[] = {48, 32};
    const std::vector<float>* ws[] = {&d.w1, &d.w2};
    for (int l = 0; l < 2; ++l) {
      std::vector<float> deq(static_cast<size_t>(rows[l] * d.cols));
      Dequantize(res->quantized[l], deq.data());
      for (int64_t i = 0; i < rows[l] * d.cols; ++i) {
        deq[i] = deq[i] / res->scales[i % d.cols];
      }
      e += Err(d, *ws[l], deq, rows[l]);
    }
    EXPECT_NEAR(e, res->error_after, 1e-9 * e);
  }
}

// alpha = 0: s == 1 exactly, so error_before is plain RTN's output error
// and the alpha-0 scales are all exactly 1.
TEST(QuantAwqTest, AlphaZeroReproducesRtn) {
  const Data d = MakeData();
  const Scheme scheme{4, 32, true};
  for (float s : AwqScales(d.mean_abs, 0.0)) ASSERT_EQ(s, 1.0f);
  auto res = SearchAwqScales({{d.w1.data(), 48}}, d.cols, d.x.data(), d.n,
                             d.mean_abs, scheme, AwqOptions{});
  ASSERT_THAT(res, IsOk());
  auto rtn = QuantizeRtn(d.w1.data(), 48, d.cols, scheme, RtnOptions{});
  ASSERT_THAT(rtn, IsOk());
  std::vector<float> deq(d.w1.size());
  Dequantize(*rtn, deq.data());
  const double e = Err(d, d.w1, deq, 48);
  EXPECT_NEAR(res->error_before, e, 1e-9 * e);
  EXPECT_EQ(res->errors[0], res->error_before);
  // With a grid of 1 only alpha = 0 is tried: the result is RTN itself.
  AwqOptions one;
  one.grid = 1;
  auto only0 = SearchAwqScales({{d.w1.data(), 48}}, d.cols, d.x.data(), d.n,
                               d.mean_abs, scheme, one);
  ASSERT_THAT(only0, IsOk());
  EXPECT_EQ(only0->alpha, 0.0f);
  EXPECT_EQ(only0->quantized[0].q, rtn->q);
  EXPECT_EQ(only0->quantized[0].scale, rtn->scale);
}

// The grid-generic search with RTN as the round trip is the RTN search: the
// same error at every alpha, the same choice. Each linear gets its own
// round trip (here two schemes), and a failing one names its linear.
TEST(QuantAwqTest, OnGridsWithRtnRoundTripsIsTheRtnSearch) {
  const Data d = MakeData();
  auto rtn_trip = [](Scheme scheme) -> AwqRoundTrip {
    return [scheme](const float* w, int64_t rows, int64_t cols, float* out) -> absl::Status {
      auto q = QuantizeRtn(w, rows, cols, scheme, RtnOptions{});
      if (!q.ok()) return q.status();
      Dequantize(*q, out);
      return absl::OkStatus();
    };
  };
  const Scheme scheme{4, 32, true};
  auto grid = SearchAwqScalesOnGrids({{d.w1.data(), 48}, {d.w2.data(), 32}}, d.cols,
                                     d.x.data(), d.n, d.mean_abs,
                                     {rtn_trip(scheme), rtn_trip(scheme)}, AwqOptions{});
  auto rtn = SearchAwqScales({{d.w1.data(), 48}, {d.w2.data(), 32}}, d.cols, d.x.data(), d.n,
                             d.mean_abs, scheme, AwqOptions{});
  ASSERT_THAT(grid, IsOk());
  ASSERT_THAT(rtn, IsOk());
  EXPECT_EQ(grid->errors, rtn->errors);
  EXPECT_EQ(grid->alpha, rtn->alpha);
  EXPECT_EQ(grid->scales, rtn->scales);
  EXPECT_GT(grid->alpha, 0.0f);  // the outlier channels make scaling pay
  EXPECT_LT(grid->error_after, grid->error_before);

  // Different grids per linear change the errors.
  auto mixed = SearchAwqScalesOnGrids({{d.w1.data(), 48}, {d.w2.data(), 32}}, d.cols,
                                      d.x.data(), d.n, d.mean_abs,
                                      {rtn_trip(scheme), rtn_trip(Scheme{8, 0, true})},
                                      AwqOptions{});
  ASSERT_THAT(mixed, IsOk());
  EXPECT_LT(mixed->errors[0], grid->errors[0]);

  AwqRoundTrip failing = [](const float*, int64_t, int64_t, float*) {
    return absl::InvalidArgumentError("no block type fits");
  };
  EXPECT_THAT(SearchAwqScalesOnGrids({{d.w1.data(), 48}, {d.w2.data(), 32}}, d.cols, d.x.data(),
                                     d.n, d.mean_abs, {rtn_trip(scheme), failing}, AwqOptions{})
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("AWQ linear 1: no block type fits")));
  EXPECT_THAT(SearchAwqScalesOnGrids({{d.w1.data(), 48}}, d.cols, d.x.data(), d.n, d.mean_abs, {},
                                     AwqOptions{})
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 linears, 0 round trips")));
}

// The clip search result is only kept when it lowers the measured error,
// and it is deterministic across thread counts.
TEST(QuantAwqTest, ClipSearchNeverWorseAndThreadIndependent) {
  const Data d = MakeData();
  AwqOptions o;
  o.clip_search = true;
  auto a = SearchAwqScales({{d.w1.data(), 48}}, d.cols, d.x.data(), d.n,
                           d.mean_abs, Scheme{4, 32, false}, o);
  o.threads = 3;
  auto b = SearchAwqScales({{d.w1.data(), 48}}, d.cols, d.x.data(), d.n,
                           d.mean_abs, Scheme{4, 32, false}, o);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_LE(a->error_after, a->errors[static_cast<int>(a->alpha * 20 + 0.5f)]);
  EXPECT_EQ(a->errors, b->errors);
  EXPECT_EQ(a->quantized[0].q, b->quantized[0].q);
  // 64 threads with every start refused (support/threads.h's test hook, the
  // path pthread_create's EAGAIN takes): all rows on the caller, same sums.
  o.threads = 64;
  support::LimitThreadStartsForTesting(0);
  auto c = SearchAwqScales({{d.w1.data(), 48}}, d.cols, d.x.data(), d.n,
                           d.mean_abs, Scheme{4, 32, false}, o);
  support::LimitThreadStartsForTesting(-1);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(a->errors, c->errors);
  EXPECT_EQ(a->quantized[0].q, c->quantized[0].q);
}

TEST(QuantAwqTest, RejectsBadInputs) {
  const Data d = MakeData();
  std::vector<float> short_abs(10, 1.0f);
  EXPECT_THAT(SearchAwqScales({{d.w1.data(), 48}}, d.cols, d.x.data(), d.n,
                              short_abs, Scheme{}, AwqOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("10 channels, expected 128")));
  std::vector<float> x = d.x;
  x[5 * d.cols + 7] = INFINITY;
  EXPECT_THAT(SearchAwqScales({{d.w1.data(), 48}}, d.cols, x.data(), d.n,
                              d.mean_abs, Scheme{}, AwqOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("row 5 col 7")));
  EXPECT_THAT(SearchAwqScales({}, d.cols, d.x.data(), d.n, d.mean_abs,
                              Scheme{}, AwqOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("0 linears")));
  std::vector<float> w = d.w1;
  w[2 * d.cols + 9] = NAN;
  EXPECT_THAT(SearchAwqScales({{w.data(), 48}}, d.cols, d.x.data(), d.n,
                              d.mean_abs, Scheme{}, AwqOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("AWQ linear 0: RTN: weight at row 2 col 9")));
}

}  // namespace
}  // namespace slimpack::quant
