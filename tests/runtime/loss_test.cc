// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: each reduction,
// class weights, ignore_index (positive and negative), extra spatial dims,
// the log_prob output, and the errors for bad targets.
#include <cmath>
#include <limits>
#include <vector>

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
using ::slimpack::runtime::testing::RunOne;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using Attr = ir::Attribute;

// Log-probabilities of 2 samples over 3 classes.
const std::vector<float> kLogp = {-0.5f, -1.0f, -2.0f, -3.0f, -0.25f, -1.5f};

OpTest Nll(RtTensor target, std::map<std::string, Attr> attrs, const RtTensor* weight = nullptr) {
  std::vector<std::pair<std::string, RtTensor>> ins = {{"x", F32({2, 3}, kLogp)},
                                                       {"t", std::move(target)}};
  if (weight != nullptr) ins.emplace_back("w", *weight);
  return OpTest{"NegativeLogLikelihoodLoss", ins, std::move(attrs), 1, 13};
}

TEST(LossTest, NllReductions) {
  const RtTensor t = I64({2}, {0, 2});  // picks -0.5 and -1.5
  ExpectFloats(RunOne(Nll(t, {{"reduction", Attr::String("none")}})), {2}, {0.5f, 1.5f});
  ExpectFloats(RunOne(Nll(t, {{"reduction", Attr::String("sum")}})), {}, {2.0f});
  ExpectFloats(RunOne(Nll(t, {})), {}, {1.0f});  // mean is the default
}

TEST(LossTest, NllWeightsAndIgnoreIndex) {
  const RtTensor w = F32({3}, {1, 2, 3});
  const RtTensor t = I64({2}, {0, 2});
  // Weighted mean divides by the weights taken: (1*0.5 + 3*1.5) / (1+3).
  ExpectFloats(RunOne(Nll(t, {}, &w)), {}, {5.0f / 4});
  ExpectFloats(RunOne(Nll(t, {{"reduction", Attr::String("none")}}, &w)), {2}, {0.5f, 4.5f});
  // An ignored target contributes neither loss nor weight.
  ExpectFloats(RunOne(Nll(t, {{"ignore_index", Attr::Int(2)}}, &w)), {}, {0.5f});
  ExpectFloats(RunOne(Nll(I64({2}, {-1, 1}), {{"ignore_index", Attr::Int(-1)}})), {}, {0.25f});
  ExpectFloats(RunOne(Nll(I64({2}, {-1, 1}), {{"ignore_index", Attr::Int(-1)},
                                               {"reduction", Attr::String("none")}})),
               {2}, {0.0f, 0.25f});
  // Every target ignored: the mean is 0/0, NaN (as ONNX's reference).
  ExpectFloats(RunOne(Nll(I64({2}, {1, 1}), {{"ignore_index", Attr::Int(1)}})), {},
               {std::numeric_limits<float>::quiet_NaN()});
}

TEST(LossTest, NllSpatialDims) {
  // [N=1, C=2, d=2]: loss[0, j] = -x[0, target[0, j], j].
  RtTensor x = F32({1, 2, 2}, {-1, -2, -3, -4});
  ExpectFloats(RunOne({"NegativeLogLikelihoodLoss", {{"x", x}, {"t", I64({1, 2}, {1, 0})}},
                       {{"reduction", Attr::String("none")}}, 1, 13}),
               {1, 2}, {3, 2});
}

TEST(LossTest, NllRejectsBadTargets) {
  EXPECT_THAT(Nll(I64({2}, {0, 3}), {}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("target 3 (element 1)")));
  EXPECT_THAT(Nll(I64({3}, {0, 1, 2}), {}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not match scores")));
  EXPECT_THAT(Nll(I64({2}, {0, 1}), {{"reduction", Attr::String("avg")}}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reduction 'avg'")));
  const RtTensor w = F32({2}, {1, 1});
  EXPECT_THAT(Nll(I64({2}, {0, 1}), {}, &w).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("weight f32[2] must be [3]")));
}

TEST(LossTest, SoftmaxCrossEntropyIsNllOfLogSoftmax) {
  const std::vector<float> scores = {1, 2, 3, 0, 0, 0};
  std::vector<float> logp(6);
  for (int n = 0; n < 2; ++n) {
    double sum = 0;
    for (int c = 0; c < 3; ++c) sum += std::exp(double(scores[n * 3 + c]));
    for (int c = 0; c < 3; ++c) logp[n * 3 + c] = float(scores[n * 3 + c] - std::log(sum));
  }
  OpTest t{"SoftmaxCrossEntropyLoss",
           {{"x", F32({2, 3}, scores)}, {"t", I64({2}, {2, 1})}, {"w", F32({3}, {1, 1, 2})}},
           {{"reduction", Attr::String("sum")}},
           2,
           13};
  auto out = t.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectFloats((*out)[0], {}, {-(2 * logp[2] + logp[4])});
  ExpectFloats((*out)[1], {2, 3}, logp);
  // Large scores do not overflow: log_softmax subtracts the maximum.
  ExpectFloats(RunOne({"SoftmaxCrossEntropyLoss",
                       {{"x", F32({1, 2}, {1000, 0})}, {"t", I64({1}, {1})}}, {}, 1, 13}),
               {}, {1000});
}

}  // namespace
}  // namespace slimpack::runtime
