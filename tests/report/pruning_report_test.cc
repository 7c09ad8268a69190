// The report's pruning section: read from a producer.passes "prune" record
// as prune/decoder/prune_structured.cc writes it, rendered into report.json,
// report.md and report.html; malformed records are named; no record, or a
// record that changed nothing, gives no section.
#include <cmath>

#include "report/pruning.h"
#include "report/render.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prune/decoder/prune_structured.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::report {
namespace {

using ::slimpack::testing::IsOk;
using ::testing::HasSubstr;
using nlohmann::json;

// Two layers: layer 0 whole, layer 1 with 30 % of the MLP and one of two
// KV groups removed.
json PruneRecord() {
  prune::PruneResult r;
  r.changed = true;
  r.params_before = 1000000;
  prune::LayerStats a;
  a.layer = 0;
  a.mlp_kept = a.mlp_total = 344;
  a.kv_heads_kept = a.kv_heads_total = 2;
  a.heads_kept = a.heads_total = 4;
  prune::LayerStats b = a;
  b.layer = 1;
  b.mlp_kept = 241;
  b.kv_heads_kept = 1;
  b.heads_kept = 2;
  b.params_removed = 3 * 128 * 103 + 192 * 128;
  b.bytes_removed = 2 * b.params_removed;  // an f16 checkpoint
  r.layers = {a, b};
  r.params_after = r.params_before - b.params_removed;
  r.bytes_removed = b.bytes_removed;
  prune::PruneOptions o;
  o.criterion = prune::Criterion::kLoss;
  o.target = prune::Target::kBoth;
  o.refit = true;
  o.ratio = 0.3;
  return json::array({{{"name", "fuse-gelu"}},
                      {{"name", "prune"},
                       {"options", prune::PruneOptionsToJson(o)},
                       {"stats", r.ToJson()}}});
}

TEST(PruningReportTest, RecordRendersInJsonMarkdownAndHtml) {
  auto p = PruningFromPasses(PruneRecord(), "cand/manifest.json");
  ASSERT_THAT(p, IsOk());
  ASSERT_TRUE(p->has_value());
  const PruningSummary& s = **p;
  ASSERT_EQ(s.layers.size(), 2u);
  EXPECT_EQ(s.layers[1].MlpKeptRatio(), 241.0 / 344);
  EXPECT_EQ(s.layers[1].HeadsKeptRatio(), 0.5);
  EXPECT_EQ(s.layers[0].MlpKeptRatio(), 1.0);

  Report rep;
  rep.candidate_name = "cand";
  rep.reference_name = "ref";
  rep.pruning = s;
  const auto j = ReportToJson(rep)["pruning"];
  EXPECT_EQ(j["criterion"], "loss");
  EXPECT_EQ(j["target"], "both");
  EXPECT_EQ(j["refit"], true);
  const uint64_t removed = 3 * 128 * 103 + 192 * 128;
  EXPECT_EQ(j["parameters_removed"], removed);
  EXPECT_EQ(j["bytes_removed"], 2 * removed);
  EXPECT_EQ(j["layers"][1]["mlp_kept_ratio"], 241.0 / 344);
  EXPECT_EQ(j["layers"][1]["heads_kept_ratio"], 0.5);
  EXPECT_EQ(j["layers"][1]["parameters_removed"], removed);
  EXPECT_EQ(j["layers"][0]["parameters_removed"], 0);

  const std::string md = RenderMarkdown(rep);
  EXPECT_THAT(md, HasSubstr("## Pruning (loss, both, refit)"));
  EXPECT_THAT(md, HasSubstr("| 1 | 70.1% (241) | 50.0% (2) | " + std::to_string(removed) + " | " +
                            std::to_string(2 * removed) + " |"));
  const std::string html = RenderHtml(rep);
  EXPECT_THAT(html, HasSubstr("<table id=\"pruning\">"));
  EXPECT_THAT(html, HasSubstr(">0.701</td>"));
  EXPECT_THAT(html, HasSubstr(">0.500</td>"));

  // Without pruning the JSON says null and the other formats say nothing.
  rep.pruning.reset();
  EXPECT_TRUE(ReportToJson(rep)["pruning"].is_null());
  EXPECT_THAT(RenderMarkdown(rep), ::testing::Not(HasSubstr("Pruning")));
}

// An ONNX graph's record (prune/graph/prune_onnx.h) lists channel groups.
TEST(PruningReportTest, OnnxGroupRecordRendersGroups) {
  json passes = json::array(
      {{{"name", "prune"},
        {"options", {{"criterion", "activation"}, {"target", "both"}, {"refit", false}}},
        {"stats",
         {{"changed", true},
          {"parameters_before", 14378},
          {"parameters_after", 9578},
          {"groups",
           {{{"group", "conv1"}, {"channels", 16}, {"kept", 13}, {"prunable", true}},
            {{"group", "fc"}, {"channels", 10}, {"kept", 10}, {"prunable", false}}}}}}}});
  auto p = PruningFromPasses(passes, "cand/manifest.json");
  ASSERT_THAT(p, IsOk());
  ASSERT_TRUE(p->has_value());
  ASSERT_EQ((*p)->groups.size(), 2u);
  EXPECT_TRUE((*p)->layers.empty());
  EXPECT_EQ((*p)->groups[0].KeptRatio(), 13.0 / 16);
  Report rep;
  rep.candidate_name = "cand";
  rep.reference_name = "ref";
  rep.pruning = **p;
  const auto j = ReportToJson(rep)["pruning"];
  EXPECT_EQ(j["groups"][0]["group"], "conv1");
  EXPECT_EQ(j["groups"][0]["kept_ratio"], 13.0 / 16);
  EXPECT_EQ(j["groups"][1]["prunable"], false);
  EXPECT_EQ(j["parameters_removed"], 4800);
  const std::string md = RenderMarkdown(rep);
  EXPECT_THAT(md, HasSubstr("| channel group | kept | channels |"));
  EXPECT_THAT(md, HasSubstr("| `conv1` | 81.2% (13) | 16 |"));
  EXPECT_THAT(md, HasSubstr("| `fc` (unprunable) | 100.0% (10) | 10 |"));
  EXPECT_THAT(md, ::testing::Not(HasSubstr("| layer | MLP kept |")));
  const std::string html = RenderHtml(rep);
  EXPECT_THAT(html, HasSubstr("<th>channel group</th>"));
  EXPECT_THAT(html, HasSubstr(">0.812</td>"));
  // kept > channels is malformed, named.
  passes[0]["stats"]["groups"][0]["kept"] = 17;
  auto bad = PruningFromPasses(passes, "cand/manifest.json");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("kept"));
}

TEST(PruningReportTest, MissingUnchangedAndMalformedRecords) {
  auto none = PruningFromPasses(json::array({{{"name", "fuse-gelu"}}}), "m.json");
  ASSERT_THAT(none, IsOk());
  EXPECT_FALSE(none->has_value());
  json unchanged = PruneRecord();
  unchanged[1]["stats"]["changed"] = false;
  auto u = PruningFromPasses(unchanged, "m.json");
  ASSERT_THAT(u, IsOk());
  EXPECT_FALSE(u->has_value());
  json broken = PruneRecord();
  broken[1]["stats"]["layers"][1]["intermediate_kept"] = "many";
  auto b = PruningFromPasses(broken, "cand/manifest.json");
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(b.status().message(), HasSubstr("cand/manifest.json"));
  EXPECT_THAT(b.status().message(), HasSubstr("intermediate_kept"));
  EXPECT_THAT(b.status().message(), HasSubstr("many"));
  // Not an artifact directory: no pruning, no error.
  auto onnx = ReadCandidatePruning(std::string(SLIMPACK_SOURCE_DIR) +
                                   "/examples/digits-cnn/model.onnx");
  ASSERT_THAT(onnx, IsOk());
  EXPECT_FALSE(onnx->has_value());
}

}  // namespace
}  // namespace slimpack::report
