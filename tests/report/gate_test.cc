// Gate rules: parsing (and its errors) and evaluation on hand-made reports.
#include "report/gate.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::report {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ReportGateTest, ParsesTheDocumentedExample) {
  auto rules = ParseGateRules("e2e.kld<=0.03, layer.sqnr>=20,top1>=0.99");
  ASSERT_THAT(rules, IsOk());
  ASSERT_EQ(rules->size(), 3u);
  EXPECT_EQ((*rules)[0].scope, "e2e");
  EXPECT_EQ((*rules)[0].metric, "kld");
  EXPECT_EQ((*rules)[0].op, "<=");
  EXPECT_DOUBLE_EQ((*rules)[0].threshold, 0.03);
  EXPECT_EQ((*rules)[1].scope, "layer");
  EXPECT_EQ((*rules)[1].text, "layer.sqnr>=20");
  EXPECT_EQ((*rules)[2].scope, "e2e");  // bare name
  EXPECT_EQ((*rules)[2].metric, "top1");
}

TEST(ReportGateTest, RejectsMalformedRulesNamingThem) {
  EXPECT_THAT(ParseGateRules("e2e.kld 0.03"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                       HasSubstr("'e2e.kld 0.03': no comparison")));
  EXPECT_THAT(ParseGateRules("e2e.kld<=abc"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                       HasSubstr("'abc' is not a finite number")));
  EXPECT_THAT(ParseGateRules("e2e.kld<=0.1,,top1>0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty rule")));
  EXPECT_THAT(ParseGateRules("layer.snr>=20"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown metric 'layer.snr' (known: e2e.accuracy_delta")));
  EXPECT_THAT(ParseGateRules("e2e.kld<=1e999"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a finite number")));
}

Report TwoLayerReport() {
  Report r;
  r.end_to_end.task = "classifier";
  r.end_to_end.classifier = true;
  const float ref[4] = {1, 2, 3, 4};
  const float small[4] = {1.001f, 2, 3, 4};  // ~67 dB
  const float big[4] = {2, 2, 3, 4};         // ~14.8 dB
  LayerReport a;
  a.node = "early";  // inherits little, introduces a lot
  a.has_quant_only = true;
  a.propagated.Add(ref, big, 4);
  a.quant_only.Add(ref, big, 4);
  LayerReport b;
  b.node = "late";  // inherits the error, introduces little
  b.depth = 1;
  b.has_quant_only = true;
  b.propagated.Add(ref, big, 4);
  b.quant_only.Add(ref, small, 4);
  r.layers = {b, a};  // culprit listed second on purpose
  r.end_to_end.output.Add(ref, small, 4);
  const int64_t labels[1] = {0};
  const float logits[2] = {1, 0};
  r.end_to_end.classes.AddBatch(logits, logits, labels, 1, 2);
  return r;
}

TEST(ReportGateTest, LayerRuleNamesOffendersCulpritFirst) {
  auto rules = ParseGateRules("layer.sqnr>=20,layer.quant_sqnr>=20,top1>=0.99");
  ASSERT_THAT(rules, IsOk());
  auto res = EvaluateGate(*rules, TwoLayerReport());
  ASSERT_THAT(res, IsOk());
  ASSERT_EQ(res->size(), 3u);
  EXPECT_FALSE((*res)[0].passed);
  ASSERT_EQ((*res)[0].offenders.size(), 2u);
  EXPECT_EQ((*res)[0].offenders[0].first, "early");  // lowest quant-only SQNR first
  EXPECT_THAT((*res)[0].message, HasSubstr("FAILED layer.sqnr>=20: 2 of 2 layers fail"));
  EXPECT_FALSE((*res)[1].passed);
  ASSERT_EQ((*res)[1].offenders.size(), 1u);
  EXPECT_EQ((*res)[1].offenders[0].first, "early");
  EXPECT_TRUE((*res)[2].passed);
  EXPECT_DOUBLE_EQ(*(*res)[2].value, 1.0);
}

TEST(ReportGateTest, MetricMissingForThisReportIsAnError) {
  auto rules = ParseGateRules("e2e.kld<=0.03");
  ASSERT_THAT(rules, IsOk());
  EXPECT_THAT(EvaluateGate(*rules, TwoLayerReport()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'e2e.kld<=0.03': kld needs a language model")));
}

TEST(ReportGateTest, PassingRulesPass) {
  auto rules = ParseGateRules("e2e.sqnr>30,layer.cosine>0.5,accuracy_delta>=-0.01");
  ASSERT_THAT(rules, IsOk());
  Report r = TwoLayerReport();
  auto res = EvaluateGate(*rules, r);
  ASSERT_THAT(res, IsOk());
  ASSERT_EQ(res->size(), 3u);  // one result per rule: an empty list would pass the loop
  for (const auto& g : *res) EXPECT_TRUE(g.passed) << g.message;
}

}  // namespace
}  // namespace slimpack::report
