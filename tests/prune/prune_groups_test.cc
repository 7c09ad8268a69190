// Structured pruning of the bundled trained LM (examples/tiny-llama: hidden
// 128, intermediate 344, 4 layers, 4 query heads sharing 2 KV heads,
// head_dim 32): coupled groups, ratio 0 as an exact no-op, a pruned model
// that verifies, builds, runs and carries a consistent config.json, and the
// least-squares refit lowering the layer output error.
#include <cstring>
#include <fstream>
#include <sstream>

#include "calibration/dataset.h"
#include "runtime/interpreter.h"
#include "ir/verifier.h"
#include "hf/llama_graph_builder.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "quantize/linear_capture.h"
#include "prune/decoder/prune_groups.h"
#include "prune/decoder/prune_structured.h"
#include "quantize/weight_matrix.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::prune {
namespace {

using ::slimpack::testing::IsOk;
using ::testing::HasSubstr;

const std::string kDir = SLIMPACK_TINY_LLAMA_DIR;

ir::Model Checkpoint() {
  auto ckpt = safetensors::ImportSafetensors(kDir);
  EXPECT_THAT(ckpt, IsOk());
  return *std::move(ckpt);
}

TEST(PruneGroupsTest, LayerOneGroupsOfTheTinyModel) {
  ir::Model m = Checkpoint();
  auto g = BuildDecoderGroups(m);
  ASSERT_THAT(g, IsOk());
  EXPECT_EQ(g->num_layers, 4);
  EXPECT_EQ(g->head_dim, 32);
  const std::string p = "model.layers.1.";
  // MLP channel 7: gate row, up row, down column.
  PruneGroup mlp = MlpChannelGroup(*g, 1, 7);
  EXPECT_EQ(mlp.kind, GroupKind::kMlpChannel);
  EXPECT_EQ(mlp.members, (std::vector<TensorSlice>{{p + "mlp.gate_proj.weight", 0, 7, 8},
                                                   {p + "mlp.up_proj.weight", 0, 7, 8},
                                                   {p + "mlp.down_proj.weight", 1, 7, 8}}));
  // KV head 1 serves query heads 2 and 3 (4 heads / 2 KV heads, repeat_kv
  // order): q rows 64..128, k/v rows 32..64, o columns 64..128.
  PruneGroup kv = KvHeadGroup(*g, 1, 1);
  EXPECT_EQ(kv.members, (std::vector<TensorSlice>{{p + "self_attn.q_proj.weight", 0, 64, 128},
                                                  {p + "self_attn.k_proj.weight", 0, 32, 64},
                                                  {p + "self_attn.v_proj.weight", 0, 32, 64},
                                                  {p + "self_attn.o_proj.weight", 1, 64, 128}}));
  PruneGroup kv0 = KvHeadGroup(*g, 1, 0);
  EXPECT_EQ(kv0.members[0], (TensorSlice{p + "self_attn.q_proj.weight", 0, 0, 64}));
  ASSERT_EQ(g->unprunable.size(), 2u);
  EXPECT_THAT(g->unprunable[0], HasSubstr("residual stream"));
}

TEST(PruneGroupsTest, MissingConfigIsFailedPrecondition) {
  ir::Model m = Checkpoint();
  m.architecture.reset();
  EXPECT_EQ(BuildDecoderGroups(m).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(PruneStructuredTest, RatioZeroIsAnExactNoOp) {
  ir::Model before = Checkpoint();
  ir::Model m = Checkpoint();
  PruneOptions o;
  o.ratio = 0;
  auto r = PruneDecoder(m, o);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(r->params_before, r->params_after);
  EXPECT_EQ(m.carried_files, before.carried_files);
  EXPECT_EQ(m.architecture->config_json, before.architecture->config_json);
  ASSERT_EQ(m.graph.initializers().size(), before.graph.initializers().size());
  for (const ir::Tensor& t : before.graph.initializers()) {
    const ir::Tensor* u = m.graph.FindInitializer(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->dims, t.dims) << t.name;
    EXPECT_EQ(u->dtype, t.dtype) << t.name;
    ASSERT_EQ(u->data.size(), t.data.size()) << t.name;
    EXPECT_EQ(std::memcmp(u->data.data(), t.data.data(), t.data.size()), 0) << t.name;
  }
}

TEST(PruneStructuredTest, BadRatioAndMissingCalibration) {
  ir::Model m = Checkpoint();
  PruneOptions o;
  o.ratio = 1.5;
  auto r = PruneDecoder(m, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("1.5"));
  o.ratio = 0.2;
  o.criterion = Criterion::kActivation;
  r = PruneDecoder(m, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("--calib"));
}

// Half the KV heads and 25 % of the MLP: the checkpoint verifies, builds,
// runs, and config.json (the carried copy too) matches the tensors.
TEST(PruneStructuredTest, PrunedModelVerifiesBuildsRunsWithConsistentConfig) {
  ir::Model m = Checkpoint();
  PruneOptions o;
  o.ratio = 0.25;
  o.criterion = Criterion::kL2;
  o.target = Target::kBoth;
  auto r = PruneDecoder(m, o);
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->removed_mlp, 4 * 86);  // round(0.25 * 344) per layer
  EXPECT_EQ(r->removed_kv, 4 * 1);    // round(0.25 * 2) = round(0.5)
  EXPECT_LT(r->params_after, r->params_before);
  // Per layer: 3 * 128 * 86 MLP + (64 + 32 + 32 + 64) * 128 attention.
  EXPECT_EQ(r->params_before - r->params_after, 4u * (3 * 128 * 86 + 192 * 128));
  EXPECT_EQ(m.architecture->intermediate_size, 258);
  EXPECT_EQ(m.architecture->num_kv_heads, 1);
  EXPECT_EQ(m.architecture->num_heads, 2);
  EXPECT_EQ(m.graph.FindInitializer("model.layers.2.self_attn.q_proj.weight")->dims,
            (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(m.graph.FindInitializer("model.layers.2.mlp.down_proj.weight")->dims,
            (std::vector<int64_t>{128, 258}));
  // The carried config.json is overridden in memory by the rewritten one;
  // other fields kept.
  ASSERT_EQ(m.carried_overrides.count("config.json"), 1u);
  const std::string carried = m.carried_overrides.at("config.json");
  auto cfg = nlohmann::json::parse(carried);
  EXPECT_EQ(cfg["intermediate_size"], 258);
  EXPECT_EQ(cfg["num_attention_heads"], 2);
  EXPECT_EQ(cfg["num_key_value_heads"], 1);
  EXPECT_EQ(cfg["head_dim"], 32);
  EXPECT_EQ(cfg["hidden_size"], 128);
  EXPECT_EQ(cfg["vocab_size"], 258);
  EXPECT_EQ(carried, m.architecture->config_json);

  auto built = hf::BuildDecoderGraph(m);
  ASSERT_THAT(built, IsOk());
  EXPECT_THAT(ir::VerifyModel(*built), IsOk());
  auto interp = runtime::Interpreter::Create(*built, {});
  ASSERT_THAT(interp, IsOk());
  auto data = calibration::Dataset::Open({kDir + "/calib_tokens.npy"},
                                         calibration::FeedInputs(built->graph), {});
  ASSERT_THAT(data, IsOk());
  auto sample = data->Next();
  ASSERT_THAT(sample, IsOk());
  ASSERT_TRUE(sample->has_value());
  auto out = interp->Run((*sample)->inputs);
  ASSERT_THAT(out, IsOk());
  ASSERT_FALSE(out->empty());
}

// The refit reconstructs down_proj's output from the kept channels better
// than dropping the columns, measured on the captured X^T X.
TEST(PruneStructuredTest, RefitLowersLayerOutputError) {
  ir::Model m = Checkpoint();
  auto runnable = hf::BuildDecoderGraph(m);
  ASSERT_THAT(runnable, IsOk());
  auto data = calibration::Dataset::Open({kDir + "/calib_tokens.npy"},
                                         calibration::FeedInputs(runnable->graph), {});
  ASSERT_THAT(data, IsOk());
  const std::string down = "model.layers.1.mlp.down_proj.weight";
  quantize::CaptureRequest cr;
  cr.hessian = true;
  auto cap = quantize::CaptureLinearInputs(*runnable, {down}, *data, 8, cr, 1);
  ASSERT_THAT(cap, IsOk());
  auto w = quantize::ToF32(*m.graph.FindInitializer(down));
  ASSERT_THAT(w, IsOk());
  const int64_t rows = 128, n = 344;
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < n; ++i)
    if (i % 5 != 0) kept.push_back(i);  // drop 20 %
  std::vector<float> dropped;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c : kept) dropped.push_back((*w)[r * n + c]);
  const auto& xtx = cap->at(down).xtx;
  const double err_drop = OutputError(*w, rows, n, xtx, kept, dropped);
  const double err_refit = OutputError(*w, rows, n, xtx, kept,
                                       RefitColumns(*w, rows, n, xtx, kept, 0.01));
  std::printf("[ prune    ] layer 1 down_proj output error: drop %.6g refit %.6g\n", err_drop,
              err_refit);
  EXPECT_GT(err_drop, 0);
  EXPECT_LT(err_refit, 0.9 * err_drop);
  // Keeping everything and refitting reproduces the layer (ridge only).
  std::vector<int64_t> all(n);
  for (int64_t i = 0; i < n; ++i) all[i] = i;
  const double err_all = OutputError(*w, rows, n, xtx, all, RefitColumns(*w, rows, n, xtx, all,
                                                                         1e-6));
  EXPECT_LT(err_all, 1e-3 * err_drop);
}

}  // namespace
}  // namespace slimpack::prune
