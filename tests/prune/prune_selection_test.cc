// Selection pieces of structured pruning without a model: per-layer rules
// (strict parsing with file / index / key / value in every error, first
// match wins per group kind, rounding), the loss criterion against the
// output-error definition it stands for, the budget's normalised global
// ranking, and the recipe's prune object with rules and a budget.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prune/decoder/prune_budget.h"
#include "prune/decoder/prune_loss.h"
#include "prune/decoder/prune_rules.h"
#include "prune/decoder/prune_structured.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::prune {
namespace {

using ::slimpack::testing::IsOk;
using ::testing::AllOf;
using ::testing::HasSubstr;
using nlohmann::json;

absl::Status RulesError(const std::string& text) {
  auto r = ParsePruneRules(json::parse(text), "rules.json", "rules");
  return r.status();
}

TEST(PruneRulesTest, ErrorsNameFileIndexKeyAndValue) {
  struct Case {
    const char* text;
    const char* where;
    const char* value;
  };
  const Case cases[] = {
      {R"([{"match": "x", "ratio": 0.1}, {"match": "y", "ratio": 1.5}])", "rules[1].ratio", "1.5"},
      {R"([{"match": "x", "keep": 0}])", "rules[0].keep", "0"},
      {R"([{"match": "x", "ratio": 0.1, "targt": "mlp"}])", "rules[0].targt", "targt"},
      {R"([{"match": "x", "ratio": 0.1, "target": "attn"}])", "rules[0].target", "attn"},
      {R"([{"match": "(", "ratio": 0.1}])", "rules[0].match", "("},
      {R"([{"match": "x", "ratio": 0.1, "keep": 0.5}])", "rules[0]", "exactly one"},
      {R"([{"ratio": 0.1}])", "rules[0]", "needs \"match\""},
      {R"([3])", "rules[0]", "expected an object"},
      {R"({"match": "x"})", "rules", "expected an array"},
  };
  for (const Case& c : cases) {
    absl::Status s = RulesError(c.text);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(s.message(), AllOf(HasSubstr("rules.json: "), HasSubstr(c.where),
                                   HasSubstr(c.value)))
        << c.text;
  }
}

TEST(PruneRulesTest, FirstMatchWinsPerKindAndRounding) {
  auto rules = ParsePruneRules(json::parse(R"([
      {"match": "layers\\.(0|7)\\.", "target": "both", "ratio": 0},
      {"match": "layers\\.", "target": "heads", "keep": 0.8},
      {"match": "layers\\.3\\.", "target": "mlp", "ratio": 0.5},
      {"match": "layers\\.3\\.", "target": "both", "ratio": 0.1}])"),
                               "r.json", "rules");
  ASSERT_THAT(rules, IsOk());
  const auto& r = *rules;
  EXPECT_EQ(FirstRule(r, 0, GroupKind::kMlpChannel), &r[0]);
  EXPECT_EQ(FirstRule(r, 7, GroupKind::kKvHead), &r[0]);
  EXPECT_EQ(FirstRule(r, 3, GroupKind::kKvHead), &r[1]);
  EXPECT_EQ(FirstRule(r, 3, GroupKind::kMlpChannel), &r[2]);
  EXPECT_EQ(FirstRule(r, 5, GroupKind::kMlpChannel), nullptr);
  // "layers\.(0|7)\." must not match layer 17 or 70 by accident.
  EXPECT_EQ(FirstRule(r, 17, GroupKind::kMlpChannel), nullptr);
  EXPECT_EQ(FirstRule(r, 70, GroupKind::kKvHead), &r[1]);
  EXPECT_EQ(RuleDrop(r[0], 344), 0);
  EXPECT_EQ(RuleDrop(r[1], 8), 2);    // keep round(6.4) = 6 of 8
  EXPECT_EQ(RuleDrop(r[1], 1), 0);    // at least one group stays
  EXPECT_EQ(RuleDrop(r[2], 344), 172);
  EXPECT_EQ(RuleDrop(r[2], 2), 1);
  // The JSON form reads back to the same rules.
  auto again = ParsePruneRules(PruneRulesToJson(r), "r.json", "rules");
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(PruneRulesToJson(*again), PruneRulesToJson(r));
}

TEST(PruneRulesTest, FileFormsAndMissingFile) {
  const std::string path = ::testing::TempDir() + "/prune_rules_test.json";
  std::ofstream(path) << R"({"rules": [{"match": "x", "target": "mlp", "ratio": 0.2}]})";
  auto r = LoadPruneRulesFile(path);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].target, Target::kMlp);
  std::ofstream(path) << R"({"rulez": []})";
  EXPECT_THAT(LoadPruneRulesFile(path).status().message(), HasSubstr(path));
  auto missing = LoadPruneRulesFile(path + ".none");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

// Random W [rows, n] and a PSD X^T X from random X.
struct Layer {
  int64_t rows = 6, n = 12, t = 40;
  std::vector<float> w;
  std::vector<double> xtx;
  Layer() {
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    for (int64_t i = 0; i < rows * n; ++i) w.push_back(nd(rng));
    std::vector<double> x(t * n);
    for (auto& v : x) v = nd(rng) * 0.5 + 0.2;
    xtx.assign(n * n, 0.0);
    for (int64_t r = 0; r < t; ++r)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) xtx[i * n + j] += x[r * n + i] * x[r * n + j];
  }
};

TEST(PruneLossTest, RemovalErrorIsTheConsumerOutputErrorOfDroppingTheGroup) {
  Layer L;
  for (int64_t width : {1, 3, 4}) {
    const std::vector<double> e = RemovalErrors(L.w, L.rows, L.n, L.xtx, width);
    ASSERT_EQ(static_cast<int64_t>(e.size()), L.n / width);
    for (int64_t g = 0; g < L.n / width; ++g) {
      std::vector<int64_t> kept;
      for (int64_t c = 0; c < L.n; ++c)
        if (c / width != g) kept.push_back(c);
      std::vector<float> w_kept;
      for (int64_t r = 0; r < L.rows; ++r)
        for (int64_t c : kept) w_kept.push_back(L.w[r * L.n + c]);
      const double want = OutputError(L.w, L.rows, L.n, L.xtx, kept, w_kept);
      EXPECT_GT(e[g], 0);
      EXPECT_NEAR(e[g], want, 1e-9 * want) << "width " << width << " group " << g;
    }
  }
}

TEST(PruneBudgetTest, NormalisedPerLayerAscendingUntilTheBudget) {
  EXPECT_EQ(NormalisedScores({1, 2, 3}), (std::vector<double>{0.5, 1.0, 1.5}));
  EXPECT_EQ(NormalisedScores({0, 0}), (std::vector<double>{0, 0}));
  // Layer 0's scores are 100x layer 1's but the same shape relative to their
  // mean; layer 1 has one clear outlier at 0.1 of its mean.
  std::vector<BudgetSlot> slots = {
      {0, GroupKind::kMlpChannel, {100, 200, 300, 400}, 10},
      {1, GroupKind::kMlpChannel, {0.1, 3.3, 3.3, 3.3}, 10},
      {1, GroupKind::kKvHead, {1, 1}, 50},
  };
  // 10 parameters: layer 1's outlier (normalised 0.04) goes first.
  EXPECT_EQ(ChooseBudgetDrops(slots, 10), (std::vector<int64_t>{0, 1, 0}));
  // 20: then layer 0's 100 (normalised 0.4).
  EXPECT_EQ(ChooseBudgetDrops(slots, 20), (std::vector<int64_t>{1, 1, 0}));
  // 30: next is layer 0's 200 (0.8) before anything at 1.0.
  EXPECT_EQ(ChooseBudgetDrops(slots, 30), (std::vector<int64_t>{2, 1, 0}));
  // 80: then a head group (1.0, worth 50) before layer 0's 300 (1.2) and
  // layer 1's 3.3s (1.32).
  EXPECT_EQ(ChooseBudgetDrops(slots, 80), (std::vector<int64_t>{2, 1, 1}));
  // 85: the other head group is the slot's last, so layer 0's 300 goes.
  EXPECT_EQ(ChooseBudgetDrops(slots, 85), (std::vector<int64_t>{3, 1, 1}));
  // Everything: one group of each slot stays.
  EXPECT_EQ(ChooseBudgetDrops(slots, 1u << 30), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(ChooseBudgetDrops(slots, 0), (std::vector<int64_t>{0, 0, 0}));
}

TEST(PruneJsonTest, RulesAndBudgetReadBackAndConflictsAreNamed) {
  auto o = ParsePruneJson(json::parse(R"({"criterion": "loss", "target": "both",
      "rules": [{"match": "layers\\.0\\.", "target": "both", "ratio": 0}],
      "budget_params": 0.8})"), "recipe.json");
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->criterion, Criterion::kLoss);
  EXPECT_EQ(o->budget_params, 0.8);
  ASSERT_EQ(o->rules.size(), 1u);
  auto again = ParsePruneJson(PruneOptionsToJson(*o), "recipe.json");
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(PruneOptionsToJson(*again), PruneOptionsToJson(*o));

  auto both = ParsePruneJson(json::parse(R"({"ratio": 0.2, "budget_params": 0.8})"), "r.json");
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(both.status().message(), AllOf(HasSubstr("r.json"), HasSubstr("budget_params")));
  auto none = ParsePruneJson(json::parse(R"({"criterion": "l2"})"), "r.json");
  EXPECT_THAT(none.status().message(), HasSubstr("\"ratio\", \"rules\" or \"budget_params\""));
  auto bad_rule = ParsePruneJson(
      json::parse(R"({"rules": [{"match": "x", "ratio": 0.1}, {"match": "y", "keep": 2}]})"),
      "r.json");
  EXPECT_THAT(bad_rule.status().message(),
              AllOf(HasSubstr("r.json"), HasSubstr("prune.rules[1].keep"), HasSubstr("2")));
  auto bad_budget = ParsePruneJson(json::parse(R"({"budget_params": 1.5})"), "r.json");
  EXPECT_THAT(bad_budget.status().message(),
              AllOf(HasSubstr("prune.budget_params"), HasSubstr("1.5")));
  EXPECT_THAT(ParseCriterion("loss"), IsOk());
  EXPECT_THAT(ParseCriterion("los").status().message(), HasSubstr("loss"));
}

}  // namespace
}  // namespace slimpack::prune
