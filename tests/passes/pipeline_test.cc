// The default ONNX pipeline on real exported fixtures: the PyTorch encoder
// block (decomposed LayerNorm x2, erf GELU) and the digits CNN
// (Conv+BN+ReLU/HardSwish). Checks the node count reduction, the ops left,
// and that outputs stay within 1e-4 of the unoptimised graph.
#include <iostream>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass_manager.h"
#include "passes/registry.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using namespace ::slimpack::passes::testing;

constexpr double kTolerance = 1e-4;

int64_t DefaultOpset(const ir::Model& model) {
  auto it = model.opset_imports.find("");
  return it == model.opset_imports.end() ? 17 : it->second;
}

absl::StatusOr<PipelineResult> RunDefault(ir::Model& model) {
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
  // GELU becomes one (-4). The batched (3-D) MatMul+Add linears stay.
  EXPECT_EQ(model.graph.nodes.size(), original.nodes.size() - 20);
  EXPECT_EQ(CountOps(model.graph, "LayerNormalization"), 2);
  EXPECT_EQ(CountOps(model.graph, "Gelu"), 1);
  EXPECT_EQ(CountOps(model.graph, "Erf"), 0);
  EXPECT_EQ(CountOps(model.graph, "Pow"), 0);
  EXPECT_EQ(CountOps(model.graph, "MatMul"), CountOps(original, "MatMul"));
  // The linears are near misses, reported with the reason.
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
            << "\n";
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
  EXPECT_LT(MaxAbsDiff(before, after), kTolerance);
  std::cout << "digits-cnn: nodes " << original.nodes.size() << " -> "
            << model.graph.nodes.size() << ", max |diff| " << MaxAbsDiff(before, after)
            << "\n";
}

TEST(DefaultPipelineTest, SecondRunOfPipelineChangesNothing) {
  for (const char* path : {"/tests/testdata/models/torch_encoder_block.onnx",
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
