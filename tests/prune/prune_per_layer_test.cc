// Per-layer structured pruning of the bundled trained LM (hidden 128,
// intermediate 344, 4 layers, 2 KV heads of 2 query heads, head_dim 32):
// rules give layers different sizes, config.json carries per-layer lists in
// memory, the artifact stores them with correct digests, and the checkpoint
// read back builds and evaluates; ratio-0 rules are an exact no-op; the loss
// criterion keeps the channels whose removal costs down_proj least; a
// parameter budget is met.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "calibration/dataset.h"
#include "hf/layer_sizes.h"
#include "hf/llama_graph_builder.h"
#include "formats/shard/reader/artifact_reader.h"
#include "formats/shard/writer/artifact_writer.h"
#include "formats/shard/writer/file_digest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "quantize/linear_capture.h"
#include "prune/decoder/prune_loss.h"
#include "prune/decoder/prune_structured.h"
#include "quantize/weight_matrix.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tiny_llama_eval.h"

namespace slimpack::prune {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::TinyLlamaCheckpoint;
using ::slimpack::testing::TinyLlamaDir;
using ::testing::HasSubstr;

constexpr int64_t kEvalWindows = 32;

std::vector<PruneRule> Rules(const char* text) {
  auto r = ParsePruneRules(nlohmann::json::parse(text), "test", "rules");
  EXPECT_THAT(r, IsOk());
  return *r;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<int64_t> Dims(const ir::Model& m, const std::string& name) {
  const ir::Tensor* t = m.graph.FindInitializer(name);
  EXPECT_NE(t, nullptr) << name;
  return t ? t->dims : std::vector<int64_t>{};
}

TEST(PrunePerLayerTest, RulesGiveLayersTheirOwnSizesAndTheArtifactRuns) {
  ir::Model m = TinyLlamaCheckpoint();
  const double ppl_before = ::slimpack::testing::TinyLlamaPerplexity(m, kEvalWindows);
  PruneOptions o;
  // First and last layer whole; half the KV heads elsewhere; layer 1's MLP
  // 30 %; other MLPs follow the global 10 %.
  o.rules = Rules(R"([
      {"match": "layers\\.(0|3)\\.", "target": "both", "ratio": 0},
      {"match": "layers\\.", "target": "heads", "keep": 0.5},
      {"match": "layers\\.1\\.", "target": "mlp", "ratio": 0.3}])");
  o.ratio = 0.1;
  o.target = Target::kMlp;
  auto r = PruneDecoder(m, o);
  ASSERT_THAT(r, IsOk());
  ASSERT_TRUE(r->changed);
  EXPECT_TRUE(r->per_layer_config);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_THAT(r->warnings[0], HasSubstr("stock Hugging Face transformers cannot load"));
  const int64_t ff[4] = {344, 344 - 103, 344 - 34, 344};  // round(0.3 / 0.1 * 344)
  const int64_t kv[4] = {2, 1, 1, 2};
  uint64_t removed = 0;
  for (int64_t l = 0; l < 4; ++l) {
    const LayerStats& st = r->layers[l];
    EXPECT_EQ(st.mlp_kept, ff[l]) << l;
    EXPECT_EQ(st.kv_heads_kept, kv[l]) << l;
    EXPECT_EQ(st.heads_kept, 2 * kv[l]) << l;
    EXPECT_EQ(st.mlp_total, 344);
    EXPECT_EQ(st.heads_total, 4);
    const uint64_t want = 3 * 128 * (344 - ff[l]) + (2 - kv[l]) * (64 + 32 + 32 + 64) * 128;
    EXPECT_EQ(st.params_removed, want) << l;
    EXPECT_EQ(st.bytes_removed, 4 * want) << l;  // f32 checkpoint
    removed += want;
    const std::string p = "model.layers." + std::to_string(l) + ".";
    EXPECT_EQ(Dims(m, p + "mlp.down_proj.weight"), (std::vector<int64_t>{128, ff[l]}));
    EXPECT_EQ(Dims(m, p + "mlp.up_proj.weight"), (std::vector<int64_t>{ff[l], 128}));
    EXPECT_EQ(Dims(m, p + "self_attn.k_proj.weight"), (std::vector<int64_t>{32 * kv[l], 128}));
    EXPECT_EQ(Dims(m, p + "self_attn.o_proj.weight"), (std::vector<int64_t>{128, 64 * kv[l]}));
  }
  EXPECT_EQ(r->params_before - r->params_after, removed);
  EXPECT_EQ(r->bytes_removed, 4 * removed);

  // config.json: the largest value per field plus per-layer lists, in
  // memory (carried_overrides), read back by the builder.
  ASSERT_EQ(m.carried_overrides.count("config.json"), 1u);
  const auto cfg = nlohmann::json::parse(m.carried_overrides.at("config.json"));
  EXPECT_EQ(cfg["intermediate_size"], 344);
  EXPECT_EQ(cfg["num_key_value_heads"], 2);
  EXPECT_EQ(cfg[hf::kIntermediateSizePerLayer], nlohmann::json({344, 241, 310, 344}));
  EXPECT_EQ(cfg[hf::kNumKeyValueHeadsPerLayer], nlohmann::json({2, 1, 1, 2}));
  EXPECT_EQ(cfg[hf::kNumAttentionHeadsPerLayer], nlohmann::json({4, 2, 2, 4}));
  EXPECT_EQ(cfg["rope_theta"], 10000.0);  // other fields kept

  // Written as an artifact: the carried config.json is the in-memory one,
  // its manifest digest matches, and the model read back builds and scores.
  const std::string out = ::testing::TempDir() + "/prune_per_layer_artifact";
  shard_writer::ArtifactOptions wo;
  wo.force = true;
  wo.threads = 2;
  ASSERT_THAT(shard_writer::WriteArtifact(m, out, wo), IsOk());
  const std::string written = ReadFile(out + "/config.json");
  EXPECT_EQ(written, m.carried_overrides.at("config.json"));
  const auto manifest = nlohmann::json::parse(ReadFile(out + "/manifest.json"));
  bool found = false;
  for (const auto& c : manifest["carried_files"]) {
    if (c["file"] != "config.json") continue;
    found = true;
    EXPECT_EQ(c["size"], written.size());
    EXPECT_EQ(c["sha256"], shard_writer::Sha256Stream::HashHex(written.data(), written.size()));
  }
  EXPECT_TRUE(found);
  auto back = shard_reader::ReadArtifactModel(out);
  ASSERT_THAT(back, IsOk());
  const double ppl_pruned = ::slimpack::testing::TinyLlamaPerplexity(m, kEvalWindows);
  const double ppl_back = ::slimpack::testing::TinyLlamaPerplexity(*back, kEvalWindows);
  std::printf("[ prune    ] per-layer rules: perplexity %.6f -> %.6f (artifact %.6f)\n",
              ppl_before, ppl_pruned, ppl_back);
  EXPECT_TRUE(std::isfinite(ppl_pruned));
  EXPECT_GT(ppl_pruned, ppl_before);
  EXPECT_LT(ppl_pruned, 3 * ppl_before);  // half the heads of two layers is costly, not fatal
  EXPECT_EQ(ppl_back, ppl_pruned);        // same f32 weights, same graph
}

// Malformed per-layer lists fail the build naming the checkpoint, field,
// index and value; a list that disagrees with the tensors names the weight.
TEST(PrunePerLayerTest, BadPerLayerListsAreNamed) {
  struct Case {
    const char* field;
    nlohmann::json value;
    const char* needle;
  };
  const Case cases[] = {
      {hf::kIntermediateSizePerLayer, {344, 344, 344}, "list of 4"},
      {hf::kIntermediateSizePerLayer, {344, 0, 344, 344}, "[1]"},
      {hf::kNumKeyValueHeadsPerLayer, {2, 2, 3, 2}, "[2]"},
      {hf::kNumAttentionHeadsPerLayer, {4, 3, 4, 4}, "layer 1 has 3 attention heads"},
      {hf::kIntermediateSizePerLayer, {344, 300, 344, 344}, "mlp.gate_proj.weight"},
  };
  for (const Case& c : cases) {
    ir::Model m = TinyLlamaCheckpoint();
    auto cfg = nlohmann::json::parse(m.architecture->config_json);
    cfg[c.field] = c.value;
    m.architecture->config_json = cfg.dump();
    auto built = hf::BuildDecoderGraph(m);
    EXPECT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument) << c.value;
    EXPECT_THAT(built.status().message(), HasSubstr(m.source_path)) << c.value;
    EXPECT_THAT(built.status().message(), HasSubstr(c.needle)) << c.value;
  }
}

TEST(PrunePerLayerTest, RatioZeroRulesAreAnExactNoOp) {
  ir::Model m = TinyLlamaCheckpoint();
  const ir::Model before = TinyLlamaCheckpoint();
  PruneOptions o;
  o.rules = Rules(R"([{"match": "layers\\.0\\.", "target": "both", "ratio": 0},
                      {"match": ".", "target": "heads", "keep": 1}])");
  o.target = Target::kBoth;
  auto r = PruneDecoder(m, o);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(r->params_after, r->params_before);
  EXPECT_TRUE(m.carried_overrides.empty());
  EXPECT_EQ(m.architecture->config_json, before.architecture->config_json);
  ASSERT_EQ(m.graph.initializers().size(), before.graph.initializers().size());
  for (const ir::Tensor& t : before.graph.initializers()) {
    const ir::Tensor* now = m.graph.FindInitializer(t.name);
    ASSERT_NE(now, nullptr);
    EXPECT_EQ(now->dims, t.dims);
    ASSERT_EQ(now->data.size(), t.data.size()) << t.name;
    EXPECT_EQ(std::memcmp(now->data.data(), t.data.data(), t.data.size()), 0) << t.name;
  }
}

TEST(PrunePerLayerTest, LossKeepsTheChannelsWhoseRemovalCostsDownProjLeast) {
  ir::Model m = TinyLlamaCheckpoint();
  const ir::Model orig = TinyLlamaCheckpoint();
  const std::string calib = TinyLlamaDir() + "/calib_tokens.npy";
  PruneOptions o;
  o.ratio = 0.2;
  o.target = Target::kMlp;
  o.criterion = Criterion::kLoss;
  o.calib_paths = {calib};
  o.calib_samples = 4;
  auto r = PruneDecoder(m, o);
  ASSERT_THAT(r, IsOk());

  // The scores recomputed independently: X^T X of down_proj's input on the
  // same calibration runs, error of dropping each column.
  auto runnable = hf::BuildDecoderGraph(orig);
  ASSERT_THAT(runnable, IsOk());
  calibration::DatasetOptions dopts;
  dopts.max_batch = 8;
  auto data = calibration::Dataset::Open({calib}, calibration::FeedInputs(runnable->graph), dopts);
  ASSERT_THAT(data, IsOk());
  const std::string down = "model.layers.2.mlp.down_proj.weight";
  quantize::CaptureRequest cr;
  cr.hessian = true;
  auto cap = quantize::CaptureLinearInputs(*runnable, {down}, *data, 4, cr, 1);
  ASSERT_THAT(cap, IsOk());
  auto w = quantize::ToF32(*orig.graph.FindInitializer(down));
  ASSERT_THAT(w, IsOk());
  const std::vector<double> err = RemovalErrors(*w, 128, 344, cap->at(down).xtx, 1);
  std::vector<int64_t> order(344);
  for (int64_t i = 0; i < 344; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return err[a] > err[b]; });
  std::vector<int64_t> kept(order.begin(), order.begin() + 275);
  std::sort(kept.begin(), kept.end());
  // The pruned up_proj rows are the original rows of those channels.
  auto up0 = quantize::ToF32(*orig.graph.FindInitializer("model.layers.2.mlp.up_proj.weight"));
  auto up1 = quantize::ToF32(*m.graph.FindInitializer("model.layers.2.mlp.up_proj.weight"));
  ASSERT_THAT(up0, IsOk());
  ASSERT_THAT(up1, IsOk());
  ASSERT_EQ(up1->size(), 275u * 128);
  for (size_t i = 0; i < kept.size(); ++i) {
    for (int64_t c = 0; c < 128; ++c) {
      ASSERT_EQ((*up1)[i * 128 + c], (*up0)[kept[i] * 128 + c]) << "kept row " << i;
    }
  }
}

TEST(PrunePerLayerTest, BudgetIsMetAndTheModelRuns) {
  ir::Model m = TinyLlamaCheckpoint();
  PruneOptions o;
  o.budget_params = 0.85;  // keep 85 % of the parameters
  o.target = Target::kBoth;
  o.criterion = Criterion::kL2;
  // Keep the first layer's heads whatever the budget prefers.
  o.rules = Rules(R"([{"match": "layers\\.0\\.", "target": "heads", "ratio": 0}])");
  auto r = PruneDecoder(m, o);
  ASSERT_THAT(r, IsOk());
  ASSERT_TRUE(r->changed);
  const uint64_t budget = static_cast<uint64_t>(std::llround(0.85 * r->params_before));
  EXPECT_LE(r->params_after, budget);
  // Greedy stops at the first group that meets it: at most one KV group
  // (2*64*128 + 2*32*128 parameters) under.
  EXPECT_GT(r->params_after + (2 * 64 + 2 * 32) * 128, budget);
  EXPECT_EQ(r->layers[0].kv_heads_kept, 2);
  const double ppl = ::slimpack::testing::TinyLlamaPerplexity(m, kEvalWindows);
  std::printf("[ prune    ] budget 85 %%: %llu -> %llu parameters, perplexity %.6f\n",
              static_cast<unsigned long long>(r->params_before),
              static_cast<unsigned long long>(r->params_after), ppl);
  EXPECT_TRUE(std::isfinite(ppl));

  // A budget below one group per layer is refused, naming the flag.
  ir::Model m2 = TinyLlamaCheckpoint();
  o.budget_params = 1000;
  o.rules.clear();
  auto tiny = PruneDecoder(m2, o);
  EXPECT_EQ(tiny.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tiny.status().message(), HasSubstr("--prune-budget-params"));
}

}  // namespace
}  // namespace slimpack::prune
