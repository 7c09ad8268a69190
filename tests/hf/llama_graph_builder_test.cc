// The built decoder graph, run by the reference interpreter, against a naive
// double-precision forward pass: llama with GQA, qwen2 with q/k/v biases,
// tied embeddings, mistral with head_dim != hidden/heads; plus structure
// (zero-copy weights, provenance) and error cases.
#include <cmath>
#include <random>

#include "runtime/interpreter.h"
#include "ir/verifier.h"
#include "hf/llama_graph_builder.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/hf/naive_decoder.h"
#include "tests/hf/tiny_checkpoint.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::hf {
namespace {

using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::TinyDecoder;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using testing::ByName;
using testing::NaiveDecoderLogits;
using testing::RandomDecoderTensors;
using testing::WriteCheckpoint;

struct Case {
  const char* label;
  TinyDecoder decoder;
  ir::DType dtype;
};

TinyDecoder Decoder(const std::string& type, int64_t hidden, int64_t heads, int64_t kv,
                    int64_t head_dim, bool biases, bool tie) {
  TinyDecoder d;
  d.model_type = type;
  d.layers = 2;
  d.hidden = hidden;
  d.heads = heads;
  d.kv_heads = kv;
  d.head_dim = head_dim;
  d.intermediate = 24;
  d.vocab = 40;
  d.biases = biases;
  d.tie = tie;
  return d;
}

class DecoderGraphTest : public ::testing::TestWithParam<Case> {};

TEST_P(DecoderGraphTest, MatchesNaiveForwardPass) {
  const Case& c = GetParam();
  TempDir dir;
  const std::vector<ir::Tensor> tensors = RandomDecoderTensors(c.decoder, c.dtype, 17);
  WriteCheckpoint(dir.path(), c.decoder, tensors);
  auto ckpt = safetensors::ImportSafetensors(dir.path());
  ASSERT_THAT(ckpt, IsOk());
  auto model = BuildDecoderGraph(*ckpt);
  ASSERT_THAT(model, IsOk());
  ASSERT_THAT(ir::VerifyModel(*model), IsOk());

  const int64_t batch = 2, seq = 7;
  std::vector<int64_t> ids(batch * seq);
  std::mt19937 rng(5);
  for (int64_t& id : ids) id = static_cast<int64_t>(rng() % c.decoder.vocab);
  runtime::InterpreterOptions options;
  options.num_threads = 2;
  auto interp = runtime::Interpreter::Create(*model, options);
  ASSERT_THAT(interp, IsOk());
  auto out = interp->Run({{kInputIds, runtime::RtTensor::FromVector<int64_t>({batch, seq}, ids)}});
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 1u);
  const runtime::RtTensor& logits = (*out)[0];
  ASSERT_EQ(logits.dims(), (std::vector<int64_t>{batch, seq, c.decoder.vocab}));

  const std::vector<double> want =
      NaiveDecoderLogits(*ckpt->architecture, ByName(tensors), ids, batch, seq);
  const std::vector<float> got = logits.ToVector<float>();
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(got[i]) - want[i]));
    max_abs = std::max(max_abs, std::abs(want[i]));
  }
  RecordProperty("max_abs_logit_diff", std::to_string(max_diff));
  EXPECT_LE(max_diff, 1e-4) << "max |logit| " << max_abs;
  EXPECT_GT(max_abs, 0.1);  // the comparison is not between near-zero values
}

INSTANTIATE_TEST_SUITE_P(
    Families, DecoderGraphTest,
    ::testing::Values(
        Case{"llama_gqa", Decoder("llama", 16, 4, 2, 4, false, false), ir::DType::kF32},
        Case{"llama_bf16", Decoder("llama", 16, 4, 2, 4, false, false), ir::DType::kBF16},
        Case{"qwen2_biases", Decoder("qwen2", 16, 4, 1, 4, true, false), ir::DType::kF32},
        Case{"tied_embeddings", Decoder("llama", 16, 2, 2, 8, false, true), ir::DType::kF32},
        Case{"mistral_wide_heads", Decoder("mistral", 16, 4, 2, 8, false, false),
             ir::DType::kF32}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.label); });

class DecoderGraphStructureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tensors_ = RandomDecoderTensors(decoder_, ir::DType::kF32, 3);
    WriteCheckpoint(dir_.path(), decoder_, tensors_);
  }
  TempDir dir_;
  TinyDecoder decoder_ = Decoder("llama", 16, 4, 2, 4, false, false);
  std::vector<ir::Tensor> tensors_;
};

TEST_F(DecoderGraphStructureTest, SharesWeightBytesAndNamesHfModulesInProvenance) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  auto model = BuildDecoderGraph(*ckpt);
  ASSERT_THAT(model, IsOk());
  for (const ir::Tensor& w : ckpt->graph.initializers()) {
    const ir::Tensor* used = model->graph.FindInitializer(w.name);
    ASSERT_NE(used, nullptr) << w.name;
    EXPECT_EQ(used->data.data(), w.data.data()) << w.name << " was copied";
  }
  bool saw_q_proj = false;
  for (const ir::Node& n : model->graph.nodes) {
    ASSERT_FALSE(n.provenance.source_nodes.empty()) << n.name;
    if (n.op_type == "Gemm" && n.inputs[1] == "model.layers.1.self_attn.q_proj.weight") {
      EXPECT_EQ(n.provenance.ToString(), "model.layers.1.self_attn.q_proj");
      saw_q_proj = true;
    }
  }
  EXPECT_TRUE(saw_q_proj);
  EXPECT_EQ(model->graph.outputs[0].name, kLogits);
  EXPECT_EQ(model->opset_imports.at(""), 17);
}

TEST_F(DecoderGraphStructureTest, MissingWeightIsNotFoundNamingIt) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  ASSERT_TRUE(ckpt->graph.RemoveInitializer("model.layers.1.mlp.up_proj.weight"));
  EXPECT_THAT(BuildDecoderGraph(*ckpt),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("lacks weight 'model.layers.1.mlp.up_proj.weight'")));
}

TEST_F(DecoderGraphStructureTest, UnsupportedArchitectureIsNamed) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  ckpt->architecture->model_type = "gpt2";
  EXPECT_THAT(BuildDecoderGraph(*ckpt),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("model_type 'gpt2' has no graph builder (supported: llama, "
                                 "mistral, qwen2)")));
  ckpt->architecture.reset();
  EXPECT_THAT(BuildDecoderGraph(*ckpt), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                 HasSubstr("config.json")));
}

TEST_F(DecoderGraphStructureTest, WrongShapeNamesWeightAndBothShapes) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  ckpt->architecture->intermediate_size = 32;
  EXPECT_THAT(BuildDecoderGraph(*ckpt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'model.layers.0.mlp.gate_proj.weight' has shape [24,16], "
                                 "config.json implies [32,16]")));
}

TEST_F(DecoderGraphStructureTest, UnimplementedConfigOptionsFailAndSlidingWindowWarns) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  const std::string config = ckpt->architecture->config_json;
  ASSERT_EQ(config.back(), '}');
  auto with = [&](const std::string& extra) {
    ir::Model m = *ckpt;
    m.architecture->config_json = config.substr(0, config.size() - 1) + ", " + extra + "}";
    return m;
  };
  EXPECT_THAT(BuildDecoderGraph(with(R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})")),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("rope_scaling (type 'llama3')")));
  EXPECT_THAT(BuildDecoderGraph(with(R"("hidden_act": "gelu")")),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("hidden_act \"gelu\"")));
  EXPECT_THAT(BuildDecoderGraph(with(R"("mlp_bias": true)")),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("mlp_bias")));
  EXPECT_THAT(BuildDecoderGraph(with(R"("rope_scaling": null, "hidden_act": "silu")")), IsOk());
  ir::Model mistral = with(R"("sliding_window": 4096)");
  mistral.architecture->model_type = "mistral";
  auto built = BuildDecoderGraph(mistral);
  ASSERT_THAT(built, IsOk());
  EXPECT_THAT(built->warnings, ::testing::Contains(HasSubstr("sliding_window 4096 is not applied")));
}

}  // namespace
}  // namespace slimpack::hf
