// LSTM and GRU against straightforward per-step reference loops.
#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/op_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::runtime::testing::ExpectFloats;
using ::slimpack::runtime::testing::F32;
using ::slimpack::runtime::testing::I64;
using ::slimpack::runtime::testing::OpTest;
using ::slimpack::runtime::testing::Random;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using Attr = ir::Attribute;

double Sig(double x) { return 1 / (1 + std::exp(-x)); }

// x·W_g row j (gate g) for input vector v: sum_k v[k] * W[g*H + j][k].
double Dot(const std::vector<float>& m, int64_t row, const float* v, int64_t n) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += m[row * n + k] * v[k];
  return s;
}

struct Sizes {
  int64_t seq, batch, input, hidden;
};

// One direction of an LSTM over `steps` (time indices in processing order)
// for batch entry b. W/R/B/P point at this direction's slices.
void LstmDirection(const Sizes& s, const std::vector<float>& x, const std::vector<float>& w,
                   const std::vector<float>& r, const std::vector<float>& b,
                   const std::vector<float>& p, const std::vector<int64_t>& steps, int64_t bi,
                   std::vector<double>& h, std::vector<double>& c,
                   std::vector<std::vector<double>>* y_at) {
  const int64_t H = s.hidden;
  for (int64_t t : steps) {
    const float* xt = x.data() + (t * s.batch + bi) * s.input;
    std::vector<float> hf(h.begin(), h.end());
    std::vector<double> nh(H), nc(H);
    for (int64_t j = 0; j < H; ++j) {
      auto gate = [&](int g) {
        return Dot(w, g * H + j, xt, s.input) + Dot(r, g * H + j, hf.data(), H) + b[g * H + j] +
               b[4 * H + g * H + j];
      };
      const double i = Sig(gate(0) + p[j] * c[j]);
      const double f = Sig(gate(2) + p[2 * H + j] * c[j]);
      const double cc = std::tanh(gate(3));
      nc[j] = f * c[j] + i * cc;
      const double o = Sig(gate(1) + p[H + j] * nc[j]);
      nh[j] = o * std::tanh(nc[j]);
    }
    h = nh;
    c = nc;
    (*y_at)[t] = h;
  }
}

TEST(LstmTest, BidirectionalWithPeepholesAndSequenceLens) {
  const Sizes s{4, 2, 3, 5};
  const int64_t H = s.hidden, dirs = 2;
  const auto x = Random(s.seq * s.batch * s.input, 61);
  const auto w = Random(dirs * 4 * H * s.input, 62), r = Random(dirs * 4 * H * H, 63);
  const auto b = Random(dirs * 8 * H, 64), p = Random(dirs * 3 * H, 65);
  const auto h0 = Random(dirs * s.batch * H, 66), c0 = Random(dirs * s.batch * H, 67);
  const std::vector<int64_t> lens = {4, 2};
  OpTest t{"LSTM",
           {{"x", F32({s.seq, s.batch, s.input}, x)}, {"w", F32({dirs, 4 * H, s.input}, w)},
            {"r", F32({dirs, 4 * H, H}, r)}, {"b", F32({dirs, 8 * H}, b)},
            {"len", RtTensor::FromVector<int32_t>({2}, {4, 2})},
            {"h0", F32({dirs, s.batch, H}, h0)}, {"c0", F32({dirs, s.batch, H}, c0)},
            {"p", F32({dirs, 3 * H}, p)}},
           {{"direction", Attr::String("bidirectional")}, {"hidden_size", Attr::Int(H)}}, 3};
  auto out = t.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> y(s.seq * dirs * s.batch * H, 0.0f), yh(dirs * s.batch * H), yc(dirs * s.batch * H);
  for (int64_t d = 0; d < dirs; ++d) {
    auto slice = [&](const std::vector<float>& v, int64_t n) {
      return std::vector<float>(v.begin() + d * n, v.begin() + (d + 1) * n);
    };
    for (int64_t bi = 0; bi < s.batch; ++bi) {
      std::vector<double> h(h0.begin() + (d * s.batch + bi) * H, h0.begin() + (d * s.batch + bi + 1) * H);
      std::vector<double> c(c0.begin() + (d * s.batch + bi) * H, c0.begin() + (d * s.batch + bi + 1) * H);
      std::vector<int64_t> steps;
      for (int64_t i = 0; i < lens[bi]; ++i) steps.push_back(d == 0 ? i : lens[bi] - 1 - i);
      std::vector<std::vector<double>> y_at(s.seq);
      LstmDirection(s, x, slice(w, 4 * H * s.input), slice(r, 4 * H * H), slice(b, 8 * H),
                    slice(p, 3 * H), steps, bi, h, c, &y_at);
      for (int64_t tt = 0; tt < lens[bi]; ++tt) {
        for (int64_t j = 0; j < H; ++j) {
          y[((tt * dirs + d) * s.batch + bi) * H + j] = static_cast<float>(y_at[tt][j]);
        }
      }
      for (int64_t j = 0; j < H; ++j) {
        yh[(d * s.batch + bi) * H + j] = static_cast<float>(h[j]);
        yc[(d * s.batch + bi) * H + j] = static_cast<float>(c[j]);
      }
    }
  }
  ExpectFloats((*out)[0], {s.seq, dirs, s.batch, H}, y, 1e-5f, 1e-4f);
  ExpectFloats((*out)[1], {dirs, s.batch, H}, yh, 1e-5f, 1e-4f);
  ExpectFloats((*out)[2], {dirs, s.batch, H}, yc, 1e-5f, 1e-4f);
}

TEST(LstmTest, BatchFirstLayoutTransposesInputsAndOutputs) {
  const int64_t seq = 3, batch = 2, in = 2, H = 3;
  const auto x = Random(seq * batch * in, 71);
  const auto w = Random(4 * H * in, 72), r = Random(4 * H * H, 73);
  std::vector<float> xt(x.size());  // [batch, seq, in]
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t k = 0; k < in; ++k) xt[(b * seq + t) * in + k] = x[(t * batch + b) * in + k];
  OpTest seq_major{"LSTM", {{"x", F32({seq, batch, in}, x)}, {"w", F32({1, 4 * H, in}, w)},
                            {"r", F32({1, 4 * H, H}, r)}},
                   {{"hidden_size", Attr::Int(H)}}, 2};
  OpTest batch_major{"LSTM", {{"x", F32({batch, seq, in}, xt)}, {"w", F32({1, 4 * H, in}, w)},
                              {"r", F32({1, 4 * H, H}, r)}},
                     {{"hidden_size", Attr::Int(H)}, {"layout", Attr::Int(1)}}, 2};
  auto a = seq_major.Run();
  auto bm = batch_major.Run();
  ASSERT_TRUE(a.ok() && bm.ok());
  ASSERT_EQ((*bm)[0].dims(), (std::vector<int64_t>{batch, seq, 1, H}));
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = 0; j < H; ++j)
        EXPECT_EQ((*a)[0].data<float>()[(t * batch + b) * H + j],
                  (*bm)[0].data<float>()[(b * seq + t) * H + j]);
  ASSERT_EQ((*bm)[1].dims(), (std::vector<int64_t>{batch, 1, H}));
}

TEST(LstmTest, UnsupportedActivationIsReported) {
  auto out = OpTest{"LSTM", {{"x", F32({1, 1, 1}, {1})}, {"w", F32({1, 4, 1}, Random(4, 1))},
                             {"r", F32({1, 4, 1}, Random(4, 2))}},
                    {{"hidden_size", Attr::Int(1)},
                     {"activations", Attr::Strings({"Sigmoid", "Softsign", "Tanh"})}}}.Run();
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("'Softsign'")));
}

class GruTest : public ::testing::TestWithParam<int> {};

TEST_P(GruTest, ReverseDirectionMatchesReference) {
  const int lbr = GetParam();
  const Sizes s{3, 2, 4, 3};
  const int64_t H = s.hidden;
  const auto x = Random(s.seq * s.batch * s.input, 81);
  const auto w = Random(3 * H * s.input, 82), r = Random(3 * H * H, 83), b = Random(6 * H, 84);
  const auto h0 = Random(s.batch * H, 85);
  OpTest t{"GRU",
           {{"x", F32({s.seq, s.batch, s.input}, x)}, {"w", F32({1, 3 * H, s.input}, w)},
            {"r", F32({1, 3 * H, H}, r)}, {"b", F32({1, 6 * H}, b)}, {"", RtTensor()},
            {"h0", F32({1, s.batch, H}, h0)}},
           {{"hidden_size", Attr::Int(H)}, {"direction", Attr::String("reverse")},
            {"linear_before_reset", Attr::Int(lbr)}},
           2};
  auto out = t.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> y(s.seq * s.batch * H), yh(s.batch * H);
  for (int64_t bi = 0; bi < s.batch; ++bi) {
    std::vector<double> h(h0.begin() + bi * H, h0.begin() + (bi + 1) * H);
    for (int64_t t = s.seq - 1; t >= 0; --t) {
      const float* xt = x.data() + (t * s.batch + bi) * s.input;
      std::vector<float> hf(h.begin(), h.end());
      std::vector<double> z(H), rr(H), nh(H);
      for (int64_t j = 0; j < H; ++j) {
        z[j] = Sig(Dot(w, j, xt, s.input) + Dot(r, j, hf.data(), H) + b[j] + b[3 * H + j]);
        rr[j] = Sig(Dot(w, H + j, xt, s.input) + Dot(r, H + j, hf.data(), H) + b[H + j] +
                    b[4 * H + j]);
      }
      std::vector<float> rh(H);
      for (int64_t j = 0; j < H; ++j) rh[j] = static_cast<float>(rr[j] * h[j]);
      for (int64_t j = 0; j < H; ++j) {
        const double rec = lbr ? rr[j] * (Dot(r, 2 * H + j, hf.data(), H) + b[5 * H + j])
                               : Dot(r, 2 * H + j, rh.data(), H) + b[5 * H + j];
        const double cand = std::tanh(Dot(w, 2 * H + j, xt, s.input) + b[2 * H + j] + rec);
        nh[j] = (1 - z[j]) * cand + z[j] * h[j];
      }
      h = nh;
      for (int64_t j = 0; j < H; ++j) y[(t * s.batch + bi) * H + j] = static_cast<float>(h[j]);
    }
    for (int64_t j = 0; j < H; ++j) yh[bi * H + j] = static_cast<float>(h[j]);
  }
  ExpectFloats((*out)[0], {s.seq, 1, s.batch, H}, y, 1e-5f, 1e-4f);
  ExpectFloats((*out)[1], {1, s.batch, H}, yh, 1e-5f, 1e-4f);
}

INSTANTIATE_TEST_SUITE_P(LinearBeforeReset, GruTest, ::testing::Values(0, 1));

}  // namespace
}  // namespace slimpack::runtime
