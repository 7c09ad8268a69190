// Tests for the registry (one table, spec parsing, default pipelines) and
// the pass manager (IR printing, verify-each naming the failing pass,
// per-pass records).
#include "passes/pass_manager.h"

#include <set>
#include <sstream>

#include "ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/registry.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace ::slimpack::passes::testing;

constexpr char kText[] = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  a = Constant <value = float[4] {1, 2, 3, 4}> ()
  b = Neg(a)
  i = Identity(x)
  y = Add(i, b)
}
)";

// Test-only passes exercising the manager's error paths.
class BreakGraphPass final : public Pass {
 public:
  std::string_view name() const override { return "break-graph"; }
  absl::Status Run(ir::Graph& graph, PassContext&) const override {
    graph.nodes.clear();  // the graph output is now undefined
    return absl::OkStatus();
  }
};

class FailingPass final : public Pass {
 public:
  std::string_view name() const override { return "always-fails"; }
  absl::Status Run(ir::Graph&, PassContext&) const override {
    return absl::FailedPreconditionError("node 'n1' is not supported");
  }
};

TEST(PassRegistryTest, EveryPassIsCreatableByItsName) {
  std::set<std::string> names;
  for (const PassInfo& info : AllPasses()) {
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate " << info.name;
    EXPECT_FALSE(info.summary.empty()) << info.name;
    auto pass = CreatePass(info.name);
    ASSERT_THAT(pass, IsOk());
    EXPECT_EQ((*pass)->name(), info.name);
  }
  for (ir::SourceFormat kind : {ir::SourceFormat::kOnnx, ir::SourceFormat::kSafetensors}) {
    for (const std::string& name : DefaultPipeline(kind)) {
      EXPECT_TRUE(names.count(name)) << name;
    }
  }
}

TEST(PassRegistryTest, ParsesOptionsAndPipelines) {
  EXPECT_THAT(SplitPipeline("eliminate-identity, fold-constants{max-output-bytes=8},fuse-gelu"),
              ElementsAre("eliminate-identity", "fold-constants{max-output-bytes=8}", "fuse-gelu"));
  auto pass = CreatePass("fold-constants{max-output-bytes=8}");
  ASSERT_THAT(pass, IsOk());
  // Neg(a) gives 16 bytes, over the cap of 8: nothing folds.
  ir::Model model = ImportText(kText);
  PassRun run = RunPass(**pass, model.graph);
  ASSERT_THAT(run.status, IsOk());
  EXPECT_FALSE(run.context.changed());
}

TEST(PassRegistryTest, RejectsUnknownPassOptionAndValue) {
  EXPECT_THAT(CreatePass("fuse-everything"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown pass 'fuse-everything'")));
  EXPECT_THAT(CreatePass("fuse-everything"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fuse-bn-into-conv")));
  EXPECT_THAT(CreatePass("fold-constants{max=3}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown option 'max'; fold-constants options: max-output-bytes")));
  EXPECT_THAT(CreatePass("fold-constants{max-output-bytes=lots}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("found 'lots'")));
  EXPECT_THAT(CreatePass("fold-constants{max-output-bytes=3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected '}'")));
}

TEST(PassManagerTest, RecordsEveryPassAndPrintsIrAfterNamedPass) {
  std::ostringstream ir;
  PassManagerOptions options;
  options.verify_each = true;
  options.print_ir_after = {"fold-constants"};
  options.ir_stream = &ir;
  PassManager manager(options);
  ASSERT_THAT(manager.AddPasses({"eliminate-identity", "fold-constants", "eliminate-dead-nodes"}),
              IsOk());
  ir::Model model = ImportText(kText);
  auto result = manager.Run(model.graph);
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->passes.size(), 3u);
  EXPECT_EQ(result->passes[0].name, "eliminate-identity");
  EXPECT_EQ(result->passes[0].nodes_before, 3);
  EXPECT_EQ(result->passes[0].nodes_after, 2);
  EXPECT_EQ(result->passes[1].stats.nodes_removed, 1);
  EXPECT_TRUE(result->passes[2].changed);  // drops initializer 'a'
  // Recorded (the field defaults to 0; steady_clock ticks in nanoseconds).
  // How long is a figure for -v, never a test bound.
  EXPECT_GT(result->passes[0].wall_seconds, 0.0);
  // Printed once, after fold-constants: Identity gone, Neg folded into
  // 'b', 'a' not yet removed.
  ir::Model expected = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  a = Constant <value = float[4] {1, 2, 3, 4}> ()
  b = Constant <value = float[4] {-1, -2, -3, -4}> ()
  y = Add(x, b)
}
)");
  EXPECT_EQ(ir.str(), "// -----// IR after fold-constants //----- //\n" +
                          ir::PrintGraph(expected.graph));
}

TEST(PassManagerTest, PrintsAfterAllPasses) {
  std::ostringstream ir;
  PassManagerOptions options;
  options.print_ir_after_all = true;
  options.ir_stream = &ir;
  PassManager manager(options);
  ASSERT_THAT(manager.AddPasses({"eliminate-identity", "eliminate-dead-nodes"}), IsOk());
  ir::Model model = ImportText(kText);
  ASSERT_THAT(manager.Run(model.graph), IsOk());
  EXPECT_THAT(ir.str(), HasSubstr("IR after eliminate-identity"));
  EXPECT_THAT(ir.str(), HasSubstr("IR after eliminate-dead-nodes"));
  EXPECT_THAT(ir.str(), HasSubstr(ir::PrintGraph(model.graph)));
}

TEST(PassManagerTest, RejectsPrintAfterPassNotInPipeline) {
  std::ostringstream ir;
  PassManagerOptions options;
  options.print_ir_after = {"fuse-gelu"};
  options.ir_stream = &ir;
  PassManager manager(options);
  ASSERT_THAT(manager.AddPasses({"eliminate-identity"}), IsOk());
  ir::Model model = ImportText(kText);
  EXPECT_THAT(manager.Run(model.graph),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pass 'fuse-gelu' is not in the pipeline")));
}

TEST(PassManagerTest, VerifyEachNamesThePassThatBrokeTheGraph) {
  PassManagerOptions options;
  options.verify_each = true;
  PassManager manager(options);
  ASSERT_THAT(manager.AddPasses({"eliminate-identity"}), IsOk());
  manager.AddPass(std::make_unique<BreakGraphPass>());
  ir::Model model = ImportText(kText);
  EXPECT_THAT(manager.Run(model.graph),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("invalid after pass 'break-graph'")));
}

TEST(PassManagerTest, PassErrorNamesThePass) {
  PassManager manager;
  manager.AddPass(std::make_unique<FailingPass>());
  ir::Model model = ImportText(kText);
  EXPECT_THAT(manager.Run(model.graph),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("pass 'always-fails': node 'n1'")));
}

}  // namespace
}  // namespace slimpack::passes
