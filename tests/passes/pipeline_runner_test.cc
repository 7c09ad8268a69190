// Tests for RunPipeline (the pipeline as `slimpack convert` runs it):
// deterministic manifest records, unknown pass names rejected with the
// list of known ones, the model opset raised for emitted ops, IR printed
// after a named pass, and weights-only models left alone.
#include "passes/pipeline.h"

#include <sstream>

#include "ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/graph_utils.h"
#include "passes/registry.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::Contains;
using ::testing::HasSubstr;
using namespace ::slimpack::passes::testing;

const std::string kEncoder =
    std::string(SLIMPACK_SOURCE_DIR) + "/tests/testdata/models/torch_encoder_block.onnx";

constexpr char kText[] = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  a = Constant <value = float[4] {1, 2, 3, 4}> ()
  b = Neg(a)
  i = Identity(x)
  y = Add(i, b)
}
)";

TEST(RunPipelineTest, RecordsAreDeterministicAndHoldNoTimings) {
  std::string first, second;
  for (std::string* out : {&first, &second}) {
    ir::Model model = ImportFile(kEncoder);
    auto result = RunPipeline(model, PipelineRequest{});
    ASSERT_THAT(result, IsOk());
    *out = result->records.dump();
  }
  EXPECT_EQ(first, second);
  ir::Model model = ImportFile(kEncoder);
  auto result = RunPipeline(model, PipelineRequest{});
  ASSERT_THAT(result, IsOk());
  std::vector<std::string> pipeline = DefaultPipeline(ir::SourceFormat::kOnnx);
  ASSERT_EQ(result->records.size(), pipeline.size());
  for (size_t i = 0; i < pipeline.size(); ++i) {
    const nlohmann::json& r = result->records[i];
    EXPECT_EQ(r["name"], pipeline[i]);
    EXPECT_EQ(r.size(), 3u) << r.dump();  // name, options, stats only
    EXPECT_EQ(r["stats"].size(), 6u) << r.dump();
    EXPECT_FALSE(r.dump().find("second") != std::string::npos) << r.dump();
  }
  EXPECT_EQ(result->records[2]["options"],
            nlohmann::json({{"max-output-bytes", "1048576"}}));
  EXPECT_EQ(result->nodes_before, 77);
  EXPECT_EQ(result->nodes_after, result->records.back()["stats"]["nodes_after"]);
  // -v shows per-pass statistics and the near misses with their reason.
  EXPECT_THAT(result->verbose_lines, Contains(HasSubstr("pass fuse-layernorm: ")));
  EXPECT_THAT(result->verbose_lines, Contains(HasSubstr("has rank 3, Gemm needs 2")));
  // A near miss with its reason: the Shape chains reading the batch dim.
  EXPECT_THAT(result->verbose_lines, Contains(HasSubstr("selects symbolic dim 0")));
}

TEST(RunPipelineTest, RecordsEffectiveOptionsOfASpec) {
  ir::Model model = ImportText(kText);
  PipelineRequest req;
  req.passes = {"eliminate-identity,fold-constants{max-output-bytes=8}"};
  auto result = RunPipeline(model, req);
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->records.size(), 2u);
  EXPECT_EQ(result->records[1]["options"], nlohmann::json({{"max-output-bytes", "8"}}));
  // Neg(a) is 16 bytes, over the cap: nothing folded.
  EXPECT_EQ(result->records[1]["stats"]["removed"], 0);
  EXPECT_EQ(result->records[1]["stats"]["nodes_after"], 2);
  EXPECT_EQ(result->records[0]["stats"]["removed"], 1);
}

TEST(RunPipelineTest, RejectsUnknownPassNamingItAndTheKnownOnes) {
  EXPECT_THAT(ValidatePassNames({"eliminate-identity", "fuse-rmsnorm"}), IsOk());
  EXPECT_THAT(ValidatePassNames({"eliminate-identity,fuse-everything"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown pass 'fuse-everything'")));
  EXPECT_THAT(ValidatePassNames({"fuse-everything"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fuse-silu")));
  ir::Model model = ImportText(kText);
  const std::string before = ir::PrintGraph(model.graph);
  PipelineRequest req;
  req.passes = {"eliminate-identity", "fuse-everything"};
  EXPECT_THAT(RunPipeline(model, req),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown pass 'fuse-everything'")));
  EXPECT_EQ(ir::PrintGraph(model.graph), before);  // nothing ran
}

TEST(RunPipelineTest, RaisesOpsetForLayerNormalization) {
  ir::Model model = ImportFile(kEncoder);
  ASSERT_EQ(model.opset_imports[""], 14);
  auto result = RunPipeline(model, PipelineRequest{});
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(model.opset_imports[""], 17);
  EXPECT_THAT(result->verbose_lines, Contains(HasSubstr("opset raised 14 -> 17")));
}

TEST(RunPipelineTest, KeepsOpsetWhenNoNewerOpIsEmitted) {
  ir::Model model = ImportText(kText);
  auto result = RunPipeline(model, PipelineRequest{});
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(model.opset_imports[""], 17);
  EXPECT_EQ(result->nodes_before, 3);
  EXPECT_EQ(result->nodes_after, 1);  // Identity removed, Neg folded
}

TEST(RunPipelineTest, PrintsIrAfterTheNamedPass) {
  ir::Model model = ImportText(kText);
  std::ostringstream ir;
  PipelineRequest req;
  req.passes = {"eliminate-identity", "fold-constants"};
  req.verify_each = true;
  req.print_ir_after = {"eliminate-identity"};
  req.ir_out = &ir;
  ASSERT_THAT(RunPipeline(model, req), IsOk());
  ir::Model expected = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  a = Constant <value = float[4] {1, 2, 3, 4}> ()
  b = Neg(a)
  y = Add(x, b)
}
)");
  EXPECT_EQ(ir.str(), "// -----// IR after eliminate-identity //----- //\n" +
                          ir::PrintGraph(expected.graph));
}

TEST(RunPipelineTest, RejectsPrintingAfterAPassNotInThePipeline) {
  ir::Model model = ImportText(kText);
  std::ostringstream ir;
  PipelineRequest req;
  req.passes = {"eliminate-identity"};
  req.print_ir_after = {"fuse-gelu"};
  req.ir_out = &ir;
  EXPECT_THAT(RunPipeline(model, req),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pass 'fuse-gelu' is not in the pipeline")));
}

TEST(RunPipelineTest, WeightsOnlyModelIsLeftAlone) {
  ir::Model model;
  model.source_format = ir::SourceFormat::kSafetensors;
  ASSERT_THAT(model.graph.AddInitializer(MakeF32Tensor("w", {2}, {1.0f, 2.0f})), IsOk());
  auto result = RunPipeline(model, PipelineRequest{});
  ASSERT_THAT(result, IsOk());
  EXPECT_TRUE(result->records.empty());
  EXPECT_EQ(model.graph.initializers().size(), 1u);
  EXPECT_THAT(result->verbose_lines, Contains(HasSubstr("no graph nodes")));
}

}  // namespace
}  // namespace slimpack::passes
