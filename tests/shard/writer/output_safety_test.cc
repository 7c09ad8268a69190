// What the writer refuses before doing any work, and how it replaces an
// existing artifact: --force, output == input, unrelated directories, stale
// staging directories.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/safetensors/safetensors_writer.h"
#include "formats/shard/writer/output_preflight.h"
#include "formats/shard/writer/staging_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/shard/writer/convert_helpers.h"
#include "tests/shard/writer/writer_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::shard_writer {
namespace {

using ::slimpack::shard_writer::testing::Args;
using ::slimpack::shard_writer::testing::Convert;
using ::slimpack::shard_writer::testing::ConvertArgs;
using ::slimpack::shard_writer::testing::Exists;
using ::slimpack::shard_writer::testing::HashFiles;
using ::slimpack::shard_writer::testing::ListDir;
using ::slimpack::shard_writer::testing::OpenAndVerify;
using ::slimpack::shard_writer::testing::OpenArtifact;
using ::slimpack::shard_writer::testing::ReadFile;
using ::slimpack::shard_writer::testing::TempDir;
using ::slimpack::shard_writer::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string RecipeDType(const std::string& artifact) {
  auto a = OpenArtifact(artifact);
  if (!a.ok()) return "<" + a.status().ToString() + ">";
  auto r = nlohmann::json::parse((*a)->manifest().recipe_json);
  return r.contains("dtype") ? r["dtype"].get<std::string>() : "keep";
}

class OutputSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteTinyLlamaCheckpoint(in_.path()); }
  TempDir in_;
  TempDir out_;
};

TEST_F(OutputSafetyTest, ExistingArtifactNeedsForceAndIsReplaced) {
  const std::string dst = out_.File("art");
  ASSERT_THAT(Convert(in_.path(), dst, Args(ir::DType::kF16)), IsOk());
  const auto before = HashFiles(dst);
  EXPECT_THAT(Convert(in_.path(), dst, Args(ir::DType::kBF16)),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       AllOf(HasSubstr(dst), HasSubstr("--force"))));
  EXPECT_EQ(HashFiles(dst), before);
  ConvertArgs force = Args(ir::DType::kBF16);
  force.force = true;
  auto summary = Convert(in_.path(), dst, force);
  ASSERT_THAT(summary, IsOk());
  EXPECT_TRUE(summary->replaced);
  ASSERT_THAT(OpenAndVerify(dst), IsOk());
  EXPECT_EQ(RecipeDType(dst), "bf16");
  // The old artifact and the staging directory are gone.
  EXPECT_THAT(ListDir(out_.path()), ElementsAre("art"));
}

TEST_F(OutputSafetyTest, EmptyDirectoryIsReplacedWithoutForce) {
  const std::string dst = out_.File("art");
  ASSERT_EQ(::mkdir(dst.c_str(), 0755), 0);
  ASSERT_THAT(Convert(in_.path(), dst), IsOk());
  EXPECT_THAT(OpenAndVerify(dst), IsOk());
}

TEST_F(OutputSafetyTest, ForceNeverDeletesUnrelatedFiles) {
  const std::string notes = out_.File("notes");
  ASSERT_EQ(::mkdir(notes.c_str(), 0755), 0);
  WriteFile(notes + "/todo.txt", "keep me");
  ConvertArgs force = Args(std::nullopt);
  force.force = true;
  EXPECT_THAT(Convert(in_.path(), notes, force),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("not a slimpack artifact")));
  EXPECT_EQ(ReadFile(notes + "/todo.txt"), "keep me");

  // An artifact someone added a file to is not replaced either.
  const std::string dst = out_.File("art");
  ASSERT_THAT(Convert(in_.path(), dst), IsOk());
  WriteFile(dst + "/mine.txt", "user data");
  EXPECT_THAT(Convert(in_.path(), dst, force),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("'mine.txt'")));
  EXPECT_EQ(ReadFile(dst + "/mine.txt"), "user data");
  EXPECT_THAT(ListDir(out_.path()), ElementsAre("art", "notes"));
}

TEST_F(OutputSafetyTest, RefusesOutputThatIsOrContainsTheInput) {
  ConvertArgs force = Args(std::nullopt);
  force.force = true;
  // The input checkpoint directory is not an artifact: --force refuses it.
  EXPECT_THAT(Convert(in_.path(), in_.path(), force),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("not a slimpack artifact")));
  // A model stored inside the artifact under a shard-like name passes the
  // directory check, and is caught by identity: replacing the artifact
  // would delete the input.
  const std::string dst = out_.File("art");
  ASSERT_THAT(Convert(in_.path(), dst), IsOk());
  const std::string inner = dst + "/shard-00099.bin";
  ASSERT_THAT(safetensors::WriteSafetensorsFile(
                  inner, {testing::F32Tensor("w", {4}, 1)}),
              IsOk());
  EXPECT_THAT(Convert(inner, dst, force),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("is inside the output"), HasSubstr(dst))));
  EXPECT_TRUE(Exists(inner));
  EXPECT_THAT(OpenAndVerify(dst), IsOk());
  EXPECT_THAT(CheckInputsOutsideOutput({dst}, dst + "/"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is the output")));
  // Through a symlink to the output's parent.
  const std::string link = in_.File("link");
  ASSERT_EQ(::symlink(out_.path().c_str(), link.c_str()), 0);
  EXPECT_THAT(CheckInputsOutsideOutput({link + "/art/config.json"}, dst),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("inside")));
  EXPECT_THAT(CheckInputsOutsideOutput({in_.File("config.json")}, dst), IsOk());
}

TEST_F(OutputSafetyTest, PreflightRejectsBadOutputsBeforeAnyWork) {
  EXPECT_THAT(Convert(in_.path(), out_.File("missing/art")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("parent directory")));
  EXPECT_THAT(Convert(in_.path(), out_.File("x.tmp")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(".tmp")));
  WriteFile(out_.File("file"), "x");
  EXPECT_THAT(Convert(in_.path(), out_.File("file")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a directory")));
  ASSERT_EQ(::symlink(out_.path().c_str(), out_.File("ln").c_str()), 0);
  ConvertArgs force = Args(std::nullopt);
  force.force = true;
  EXPECT_THAT(Convert(in_.path(), out_.File("ln"), force),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("symbolic link")));
  EXPECT_THAT(PreflightOutput("", false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name a directory")));
  EXPECT_THAT(PreflightOutput(out_.File(".."), false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name a directory")));
  // Nothing was created by any of the refusals.
  EXPECT_THAT(ListDir(out_.path()), ElementsAre("file", "ln"));
}

TEST_F(OutputSafetyTest, BadShardSizeIsRejectedBeforeStaging) {
  EXPECT_THAT(Convert(in_.path(), out_.File("art"), Args(std::nullopt, 4096)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shard size 4096")));
  EXPECT_TRUE(ListDir(out_.path()).empty());
}

TEST_F(OutputSafetyTest, StaleStagingIsRemovedButALockedOneIsKept) {
  const std::string stale = out_.File("art.0123456789abcdef.tmp");
  const std::string live = out_.File("art.fedcba9876543210.tmp");
  const std::string other = out_.File("other.0123456789abcdef.tmp");
  for (const auto& d : {stale, live, other}) {
    ASSERT_EQ(::mkdir(d.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((d + "/artifact").c_str(), 0755), 0);
    WriteFile(d + "/artifact/shard-00000.bin", "partial");
  }
  int fd = ::open(live.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  // flock locks are per open file description: a second open in this
  // process conflicts like another process would.
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  ASSERT_THAT(Convert(in_.path(), out_.File("art")), IsOk());
  ::close(fd);
  EXPECT_FALSE(Exists(stale));
  EXPECT_TRUE(Exists(live + "/artifact/shard-00000.bin"));
  EXPECT_TRUE(Exists(other));  // another output's staging is not ours
  // The loader rejects a staging directory as not an artifact.
  EXPECT_THAT(OpenArtifact(live), StatusIs(absl::StatusCode::kNotFound,
                                          HasSubstr("manifest.json")));
}

// Issue 16 item 8: the writer applies the loader's rules (shard::IsManifestUint)
// to what it records from the model, and refuses before writing anything
// rather than producing an artifact its own loader rejects.
ir::Model DimModel(int64_t input_dim) {
  ir::Model m;
  m.source_format = ir::SourceFormat::kOnnx;
  m.ir_version = 8;
  m.opset_imports[""] = 13;
  m.graph.name = "g";
  m.graph.inputs.push_back(
      {"x", ir::DType::kF32, ir::Shape({ir::Dim::Static(input_dim), ir::Dim::Static(4)})});
  m.graph.outputs.push_back(
      {"y", ir::DType::kF32, ir::Shape({ir::Dim::Symbolic("n"), ir::Dim::Static(4)})});
  EXPECT_THAT(m.graph.AddInitializer(testing::F32Tensor("w", {4}, 1)), IsOk());
  ir::Node add;
  add.name = "add";
  add.op_type = "Add";
  add.inputs = {"x", "w"};
  add.outputs = {"y"};
  m.graph.nodes.push_back(add);
  return m;
}

ArtifactOptions OneThread() {
  ArtifactOptions o;
  o.threads = 1;
  return o;
}

TEST(WriteTimeValidationTest, GraphDimAbove2Pow53IsRefusedBeforeWriting) {
  TempDir out;
  const std::string dst = out.File("art");
  EXPECT_THAT(WriteArtifact(DimModel(int64_t{1} << 62), dst, OneThread()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("graph 'g': input 'x': dim 0 is 4611686018427387904"),
                             HasSubstr("[0, 2^53]"))));
  // One past the bound, in a subgraph's value_info.
  ir::Model sub = DimModel(2);
  auto branch = std::make_shared<ir::Graph>();
  branch->name = "then";
  branch->outputs.push_back({"t", ir::DType::kF32, ir::Shape({ir::Dim::Static(4)})});
  branch->value_info["t"] = {"t", ir::DType::kF32,
                             ir::Shape({ir::Dim::Static((int64_t{1} << 53) + 1)})};
  ir::Node ident;
  ident.name = "id";
  ident.op_type = "Identity";
  ident.inputs = {"y"};
  ident.outputs = {"t"};
  branch->nodes.push_back(ident);
  ir::Node cond;
  cond.name = "branch";
  cond.op_type = "If";
  cond.inputs = {"y"};
  cond.outputs = {"z"};
  cond.attributes["then_branch"] = ir::Attribute::GraphValue(branch);
  sub.graph.nodes.push_back(cond);
  EXPECT_THAT(WriteArtifact(sub, dst, OneThread()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("graph 'branch/then_branch': value_info 't': dim 0 is "
                                 "9007199254740993")));
  // Nothing was created: no artifact, no staging directory.
  EXPECT_TRUE(ListDir(out.path()).empty());

  // The bound itself is valid, and the loader agrees.
  ASSERT_THAT(WriteArtifact(DimModel(int64_t{1} << 53), dst, OneThread()), IsOk());
  auto a = OpenArtifact(dst);
  ASSERT_THAT(a, IsOk());
  ASSERT_TRUE((*a)->manifest().onnx.has_value());
  ASSERT_EQ((*a)->manifest().onnx->graph.inputs.size(), 1u);
  EXPECT_EQ((*a)->manifest().onnx->graph.inputs[0].dims.at(0).value, int64_t{1} << 53);
  EXPECT_THAT(OpenAndVerify(dst), IsOk());
}

TEST(WriteTimeValidationTest, ArchitectureCountOutsideTheRangeIsRefused) {
  TempDir out;
  ir::Model m;
  m.source_format = ir::SourceFormat::kSafetensors;
  ASSERT_THAT(m.graph.AddInitializer(testing::F32Tensor("w", {4}, 1)), IsOk());
  ir::ArchitectureInfo arch;
  arch.model_type = "llama";
  arch.num_layers = 1;
  arch.num_heads = -1;
  m.architecture = arch;
  EXPECT_THAT(WriteArtifact(m, out.File("art"), OneThread()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("num_heads is -1"), HasSubstr("[0, 2^53]"))));
  EXPECT_TRUE(ListDir(out.path()).empty());
}

TEST(StagingNameTest, MatchesOnlyOurPattern) {
  EXPECT_TRUE(IsStagingNameFor("art.0123456789abcdef.tmp", "art"));
  EXPECT_FALSE(IsStagingNameFor("art.0123456789abcdeF.tmp", "art"));
  EXPECT_FALSE(IsStagingNameFor("art.0123456789abcde.tmp", "art"));
  EXPECT_FALSE(IsStagingNameFor("arts.0123456789abcdef.tmp", "art"));
  EXPECT_FALSE(IsStagingNameFor("art.0123456789abcdef.tmpx", "art"));
}

}  // namespace
}  // namespace slimpack::shard_writer
