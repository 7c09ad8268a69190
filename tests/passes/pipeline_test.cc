// The default ONNX pipeline on real exported fixtures: the PyTorch encoder
// block (decomposed LayerNorm x2, erf GELU) and the digits CNN
// (Conv+BN+ReLU/HardSwish). Checks the node count reduction, the ops left,
// and that outputs stay within 1e-5 of the unoptimised graph; the
// activation-traffic estimate must go down.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/rt_tensor.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "passes/graph_utils.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "passes/registry.h"
#include "passes/traffic_estimate.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using namespace ::slimpack::passes::testing;

constexpr double kTolerance = 1e-5;

// "Add:3 MatMul:2 ..." (domain-qualified for non-default domains).
std::string OpHistogram(const ir::Graph& graph) {
  std::map<std::string, int> counts;
  for (const ir::Node& node : graph.nodes) {
    counts[(node.domain.empty() ? "" : node.domain + ".") + node.op_type]++;
  }
  std::string out;
  for (const auto& [op, n] : counts) out += op + ":" + std::to_string(n) + " ";
  return out;
}

int64_t DefaultOpset(const ir::Model& model) {
  auto it = model.opset_imports.find("");
  return it == model.opset_imports.end() ? 17 : it->second;
}

absl::StatusOr<PassManagerResult> RunDefault(ir::Model& model) {
  PassManagerOptions options;
  options.verify_each = true;
  options.opset = DefaultOpset(model);
  PassManager manager(options);
  absl::Status added = manager.AddPasses(DefaultPipeline(ir::SourceFormat::kOnnx));
  if (!added.ok()) return added;
  return manager.Run(model.graph);
}

TEST(DefaultPipelineTest, EncoderBlockFusesLayerNormsAndGelu) {
  ir::Model model = ImportFile(std::string(SLIMPACK_SOURCE_DIR) +
                               "/tests/testdata/models/torch_encoder_block.onnx");
  const ir::Graph original = model.graph;
  auto result = RunDefault(model);
  ASSERT_THAT(result, IsOk());
  // Two 9-node layer norms become one node each (-16), the 5-node erf
  // GELU becomes one (-4). Of the 8 Shape -> Gather -> Unsqueeze chains
  // that build Reshape targets, the 4 reading the static sequence/hidden
  // dims fold to constants (-12); the 4 reading the dynamic batch stay.
  // Attention (MatMul, Div, Softmax, MatMul) becomes one node (-3). The
  // batched (3-D) MatMul+Add linears stay.
  EXPECT_EQ(model.graph.nodes.size(), original.nodes.size() - 35);
  EXPECT_EQ(CountOps(model.graph, "Attention"), 1);
  EXPECT_EQ(CountOps(model.graph, "Softmax"), 0);
  EXPECT_EQ(CountOps(model.graph, "LayerNormalization"), 2);
  EXPECT_EQ(CountOps(model.graph, "Gelu"), 1);
  EXPECT_EQ(CountOps(model.graph, "Erf"), 0);
  EXPECT_EQ(CountOps(model.graph, "Pow"), 0);
  EXPECT_EQ(CountOps(original, "Shape"), 8);
  EXPECT_EQ(CountOps(model.graph, "Shape"), 4);
  EXPECT_EQ(CountOps(model.graph, "Gather"), 4);
  EXPECT_EQ(CountOps(model.graph, "Unsqueeze"), 4);
  EXPECT_EQ(CountOps(model.graph, "MatMul"), CountOps(original, "MatMul") - 2);
  // The 3-D linears are near misses by default (weight quantizers look
  // for MatMul), reported with the reason.
  for (const PassRecord& record : result->passes) {
    if (record.name != "fuse-matmul-add") continue;
    EXPECT_EQ(record.stats.nodes_matched, 0);
    EXPECT_THAT(record.log, ::testing::Contains(::testing::HasSubstr("has rank 3, Gemm needs 2")));
  }
  // LayerNormalization needs opset 17; the model is opset 14.
  EXPECT_EQ(result->required_opset, 17);
  auto inputs = RandomInputs(original, 42, /*symbolic_dim=*/3);
  auto before = Evaluate(original, inputs, DefaultOpset(model));
  auto after = Evaluate(model.graph, inputs, 17);
  ASSERT_FALSE(before.empty());
  EXPECT_LT(MaxAbsDiff(before, after), kTolerance);
  std::cout << "encoder: nodes " << original.nodes.size() << " -> "
            << model.graph.nodes.size() << ", max |diff| " << MaxAbsDiff(before, after)
            << "\n  before: " << OpHistogram(original)
            << "\n  after:  " << OpHistogram(model.graph) << "\n";
}

TEST(DefaultPipelineTest, DigitsCnnFoldsBatchNormAndActivations) {
  ir::Model model = ImportFile(std::string(SLIMPACK_SOURCE_DIR) + "/examples/digits-cnn/model.onnx");
  const ir::Graph original = model.graph;
  auto result = RunDefault(model);
  ASSERT_THAT(result, IsOk());
  // Conv+BN+act x3 -> FusedConv x3; GlobalAveragePool, Flatten, Gemm stay.
  EXPECT_EQ(original.nodes.size(), 12u);
  EXPECT_EQ(model.graph.nodes.size(), 6u);
  EXPECT_EQ(CountOps(model.graph, "FusedConv"), 3);
  EXPECT_EQ(CountOps(model.graph, "BatchNormalization"), 0);
  // BN parameters are gone: 3 x 4 tensors.
  EXPECT_EQ(model.graph.initializers().size(), original.initializers().size() - 12);
  auto inputs = RandomInputs(original, 7, /*symbolic_dim=*/4);
  auto before = Evaluate(original, inputs, DefaultOpset(model));
  auto after = Evaluate(model.graph, inputs, DefaultOpset(model));
  ASSERT_FALSE(before.empty());
  // Relative to the logits' size: folding BatchNorm into the conv weights
  // changes each product's rounding, and these logits reach ~|30| on random
  // inputs, where 1e-5 absolute is a few float ulps.
  double scale = 1.0;
  for (const auto& t : before) {
    for (float v : t) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  }
  EXPECT_LT(MaxAbsDiff(before, after), kTolerance * scale);
  std::cout << "digits-cnn: nodes " << original.nodes.size() << " -> "
            << model.graph.nodes.size() << ", max |diff| " << MaxAbsDiff(before, after)
            << " (max |logit| " << scale << ")\n";
}

// Node count and activation traffic before -> after, printed for the docs.
void ReportTraffic(const std::string& label, const ir::Graph& before,
                   const ir::Graph& after, int64_t opset) {
  auto b = EstimateActivationTraffic(before, opset, 1);
  auto a = EstimateActivationTraffic(after, opset < 17 ? 17 : opset, 1);
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(a, IsOk());
  EXPECT_LT(a->total(), b->total()) << label;
  std::cout << label << ": nodes " << before.nodes.size() << " -> " << after.nodes.size()
            << ", activation bytes per inference (batch 1) " << b->total() << " -> "
            << a->total() << "\n";
}

TEST(DefaultPipelineTest, LlamaBlockFusesRmsNormSiluAndAttention) {
  ir::Model model = ImportFile(std::string(SLIMPACK_SOURCE_DIR) +
                               "/tests/testdata/models/torch_llama_block.onnx");
  const ir::Graph original = model.graph;
  auto result = RunDefault(model);
  ASSERT_THAT(result, IsOk());
  std::cout << "llama block: nodes " << original.nodes.size() << " -> "
            << model.graph.nodes.size() << "\n  before: " << OpHistogram(original)
            << "\n  after:  " << OpHistogram(model.graph) << "\n";
  EXPECT_EQ(CountOps(model.graph, "RMSNorm"), 2);
  EXPECT_EQ(CountOps(model.graph, "SiLU"), 1);
  EXPECT_EQ(CountOps(model.graph, "Attention"), 1);
  EXPECT_EQ(CountOps(model.graph, "Pow"), 0);
  EXPECT_EQ(CountOps(model.graph, "Sigmoid"), 0);
  EXPECT_EQ(CountOps(model.graph, "Softmax"), 0);
  // The 4 Casts (f32 -> f32) go with eliminate-identity; 2 x 7-node RMS
  // norms (Pow, ReduceMean, Add, Sqrt, Div(1, .), Mul, Mul weight) -> 1
  // each, x*Sigmoid(x) -> SiLU, attention 5 -> 1; 4 static-shape chains of
  // Shape/Gather/Unsqueeze reading the batch dim stay.
  EXPECT_EQ(original.nodes.size(), 59u);
  EXPECT_EQ(model.graph.nodes.size(), 38u);
  auto inputs = RandomInputs(original, 11, /*symbolic_dim=*/3);
  auto before = Evaluate(original, inputs, DefaultOpset(model));
  auto after = Evaluate(model.graph, inputs, DefaultOpset(model));
  ASSERT_FALSE(before.empty());
  EXPECT_LT(MaxAbsDiff(before, after), kTolerance);
  std::cout << "llama block: max |diff| " << MaxAbsDiff(before, after) << "\n";
  ReportTraffic("llama block", original, model.graph, DefaultOpset(model));
}

// Paddle2ONNX-style CNN: conv bias as Reshape + Add, so BN and ReLU reach
// the Conv only after fold-constants and fold-add-into-conv.
TEST(DefaultPipelineTest, PaddleStyleCnnFoldsBiasBatchNormAndRelu) {
  ir::Model model = ImportFile(std::string(SLIMPACK_SOURCE_DIR) +
                               "/tests/testdata/models/paddle_style.onnx");
  const ir::Graph original = model.graph;
  ASSERT_THAT(RunDefault(model), IsOk());
  // 2 x (Reshape, Add, BN, Relu) absorbed into 2 FusedConv (-8).
  EXPECT_EQ(original.nodes.size(), 17u);
  EXPECT_EQ(model.graph.nodes.size(), 9u);
  EXPECT_EQ(CountOps(model.graph, "FusedConv"), 2);
  EXPECT_EQ(CountOps(model.graph, "BatchNormalization"), 0);
  EXPECT_EQ(CountOps(model.graph, "Reshape"), 0);
  auto inputs = RandomInputs(original, 5, /*symbolic_dim=*/3);
  auto before = Evaluate(original, inputs, DefaultOpset(model));
  auto after = Evaluate(model.graph, inputs, DefaultOpset(model));
  ASSERT_FALSE(before.empty());
  EXPECT_LT(MaxAbsDiff(before, after), kTolerance);
  std::cout << "paddle-style: nodes " << original.nodes.size() << " -> "
            << model.graph.nodes.size() << ", max |diff| " << MaxAbsDiff(before, after)
            << "\n  after: " << OpHistogram(model.graph) << "\n";
}

// Paddle2ONNX at opset 12: conv bias Add, decomposed hard_swish, fc,
// decomposed layer_norm. The stored reference output was computed with
// torch.nn.functional (no offline ONNX runtime has Clip), so the
// interpreter is checked against it first, then the pipeline against the
// interpreter.
TEST(DefaultPipelineTest, PaddleHardSwishLayerNormCnn) {
  const std::string dir = std::string(SLIMPACK_SOURCE_DIR) + "/tests/testdata/models/";
  ir::Model model = ImportFile(dir + "paddle_hardswish_ln.onnx");
  const ir::Graph original = model.graph;
  auto io = safetensors::ImportSafetensors(dir + "paddle_hardswish_ln.io.safetensors");
  ASSERT_THAT(io, IsOk());
  const ir::Tensor* x = io->graph.FindInitializer("inputs.x");
  const ir::Tensor* want = io->graph.FindInitializer("outputs.layer_norm_0.tmp_8");
  ASSERT_NE(x, nullptr);
  ASSERT_NE(want, nullptr);
  auto x_rt = runtime::RtTensor::FromIr(*x);
  ASSERT_THAT(x_rt, IsOk());
  std::map<std::string, runtime::RtTensor> inputs = {{"x", *x_rt}};
  auto before = Evaluate(original, inputs, 12);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_LT(MaxAbsDiff(before, {FloatsOf(*want)}), kTolerance) << "interpreter vs torch";

  auto result = RunPipeline(model, PipelineRequest{});
  ASSERT_THAT(result, IsOk());
  // Reshape folded; bias Add into the Conv; the 4-node hard_swish becomes
  // slimpack.HardSwish (opset 12 < 14) and then the Conv's activation;
  // the fc MatMul + Add becomes Gemm; the 9-node layer norm becomes
  // LayerNormalization (opset raised to 17).
  EXPECT_EQ(original.nodes.size(), 20u);
  EXPECT_EQ(model.graph.nodes.size(), 5u);
  EXPECT_EQ(CountOps(model.graph, "Gemm"), 1);
  EXPECT_EQ(CountOps(model.graph, "FusedConv"), 1);
  EXPECT_EQ(CountOps(model.graph, "LayerNormalization"), 1);
  EXPECT_EQ(CountOps(model.graph, "Clip"), 0);
  EXPECT_EQ(model.opset_imports[""], 17);
  for (const ir::Node& node : model.graph.nodes) {
    if (node.op_type == "FusedConv") {
      ASSERT_NE(node.FindAttribute("activation"), nullptr);
      EXPECT_EQ(node.FindAttribute("activation")->s, "HardSwish");
    }
  }
  auto after = Evaluate(model.graph, inputs, 17);
  EXPECT_LT(MaxAbsDiff(before, after), kTolerance);
  std::cout << "paddle hardswish+layernorm: nodes " << original.nodes.size() << " -> "
            << model.graph.nodes.size() << ", max |diff| " << MaxAbsDiff(before, after)
            << ", vs torch " << MaxAbsDiff(before, {FloatsOf(*want)})
            << "\n  after: " << OpHistogram(model.graph) << "\n";
}

// A scripted If: passes leave subgraphs and the values they read alone.
// With fuse-matmul-add{batched=true} the encoder's 6 biased 3-D linears
// become slimpack.MatMulAdd, bit-exact.
TEST(DefaultPipelineTest, EncoderBlockWithBatchedMatMulAdd) {
  ir::Model model = ImportFile(std::string(SLIMPACK_SOURCE_DIR) +
                               "/tests/testdata/models/torch_encoder_block.onnx");
  const ir::Graph original = model.graph;
  std::vector<std::string> pipeline = DefaultPipeline(ir::SourceFormat::kOnnx);
  for (std::string& spec : pipeline) {
    if (spec == "fuse-matmul-add") spec = "fuse-matmul-add{batched=true}";
  }
  PipelineRequest req;
  req.passes = pipeline;
  req.verify_each = true;
  auto result = RunPipeline(model, req);
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(model.graph.nodes.size(), original.nodes.size() - 41);
  EXPECT_EQ(CountOps(model.graph, "MatMulAdd"), 6);
  auto inputs = RandomInputs(original, 42, /*symbolic_dim=*/3);
  auto before = Evaluate(original, inputs, 14);
  auto after = Evaluate(model.graph, inputs, 17);
  ASSERT_FALSE(before.empty());
  EXPECT_LT(MaxAbsDiff(before, after), kTolerance);
  ReportTraffic("encoder (batched=true)", original, model.graph, 14);
}

TEST(DefaultPipelineTest, ScriptedIfKeepsItsOutputs) {
  ir::Model model = ImportFile(std::string(SLIMPACK_SOURCE_DIR) +
                               "/tests/testdata/models/torch_script_if.onnx");
  const ir::Graph original = model.graph;
  ASSERT_THAT(RunDefault(model), IsOk());
  EXPECT_EQ(CountOps(model.graph, "If"), 1);
  for (uint32_t seed : {1u, 2u, 3u}) {
    auto inputs = RandomInputs(original, seed, /*symbolic_dim=*/3);
    auto before = Evaluate(original, inputs, DefaultOpset(model));
    auto after = Evaluate(model.graph, inputs, DefaultOpset(model));
    ASSERT_FALSE(before.empty());
    EXPECT_EQ(MaxAbsDiff(before, after), 0.0) << "seed " << seed;
  }
}

// PyTorch MLP: Gemm + Relu/Sigmoid become FusedGemm.
TEST(DefaultPipelineTest, TorchMlpFusesGemmActivations) {
  ir::Model model = ImportFile(std::string(SLIMPACK_SOURCE_DIR) +
                               "/tests/testdata/models/torch_mlp.onnx");
  const ir::Graph original = model.graph;
  ASSERT_THAT(RunDefault(model), IsOk());
  EXPECT_EQ(original.nodes.size(), 9u);
  EXPECT_EQ(model.graph.nodes.size(), 7u);
  EXPECT_EQ(CountOps(model.graph, "FusedGemm"), 2);
  auto inputs = RandomInputs(original, 5, /*symbolic_dim=*/3);
  auto before = Evaluate(original, inputs, DefaultOpset(model));
  auto after = Evaluate(model.graph, inputs, DefaultOpset(model));
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(MaxAbsDiff(before, after), 0.0);  // activation fusion is bit-exact
}

TEST(DefaultPipelineTest, SecondRunOfPipelineChangesNothing) {
  for (const char* path : {"/tests/testdata/models/torch_encoder_block.onnx",
                           "/tests/testdata/models/torch_llama_block.onnx",
                           "/tests/testdata/models/torch_mlp.onnx",
                           "/tests/testdata/models/paddle_style.onnx",
                           "/tests/testdata/models/paddle_hardswish_ln.onnx",
                           "/tests/testdata/models/torch_script_if.onnx",
                           "/examples/digits-cnn/model.onnx"}) {
    ir::Model model = ImportFile(std::string(SLIMPACK_SOURCE_DIR) + path);
    ASSERT_THAT(RunDefault(model), IsOk());
    auto second = RunDefault(model);
    ASSERT_THAT(second, IsOk());
    for (const PassRecord& record : second->passes) {
      EXPECT_FALSE(record.changed) << path << ": " << record.name;
    }
  }
}

}  // namespace
}  // namespace slimpack::passes
