// One corrupt artifact per failure mode (bad-inputs.md items 35-45): each
// starts from the valid sample artifact, breaks one thing, and must fail
// with a specific code and a message naming the culprit, at the stage where
// the loader can see it (open, first shard access, or verify), never crash.
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "formats/shard/loader/artifact.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shard/loader/loader_matchers.h"
#include "tests/shard/loader/sample_artifacts.h"
#include "tests/shard/loader/test_artifact_writer.h"

namespace slimpack::loader {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;
using testing::J;
using testing::StatusIs;
using testing::TestArtifact;

enum class Stage { kOpen, kMap, kVerify };

struct CorruptionCase {
  const char* name;
  // Edits the artifact before it is written (manifest is resealed after).
  std::function<void(TestArtifact&)> edit;
  // Edits the written directory (optional).
  std::function<void(const std::string& dir)> edit_dir;
  Stage stage;
  StatusCode code;
  const char* message;
};

void PrintTo(const CorruptionCase& c, std::ostream* os) { *os << c.name; }

void NoEdit(TestArtifact&) {}

// Rewrites manifest.json through `fn` and reseals it when it still parses.
std::function<void(const std::string&)> EditManifestText(
    std::function<void(std::string&)> fn) {
  return [fn](const std::string& dir) {
    std::string text = testing::ReadFileOrDie(dir + "/manifest.json");
    fn(text);
    testing::WriteFileOrDie(dir + "/manifest.json", testing::SealManifestText(text));
  };
}

void ReplaceFirst(std::string& text, const std::string& from, const std::string& to) {
  size_t pos = text.find(from);
  ASSERT_NE(pos, std::string::npos) << from;
  text.replace(pos, from.size(), to);
}

J& Tensor(TestArtifact& a, int i) { return a.manifest["tensors"][i]; }

// The sample's main graph: nodes mm (MatMul x,a -> y), add (Add y,b -> z),
// if (If cond -> w, both branches Identity y -> t_out).
J& MainGraph(TestArtifact& a) { return a.manifest["model"]["onnx"]["graph"]; }
J& ThenBranch(TestArtifact& a) {
  return MainGraph(a)["nodes"][2]["attributes"]["then_branch"]["value"];
}
// Reorders the main graph's nodes as `order` (indices into the original).
void ReorderNodes(TestArtifact& a, std::vector<int> order) {
  J nodes = MainGraph(a)["nodes"];
  J reordered = J::Array();
  for (int i : order) reordered.Push(nodes[i]);
  MainGraph(a)["nodes"] = reordered;
}

std::string Deep(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
}

const CorruptionCase kCases[] = {
    // --- files and names (items 35, 36, 43, 44) ---
    {"TruncatedShard", [](TestArtifact& a) { a.shard_bytes[1].resize(16500); }, nullptr,
     Stage::kMap, StatusCode::kOutOfRange, "shard-00001.bin: truncated: file has 16500 bytes"},
    {"GrownShard", [](TestArtifact& a) { a.shard_bytes[0] += std::string(64, '\0'); },
     nullptr, Stage::kMap, StatusCode::kDataLoss, "shard-00000.bin: file has 16768 bytes"},
    {"MissingShardFile", NoEdit,
     [](const std::string& dir) { ::unlink((dir + "/shard-00001.bin").c_str()); },
     Stage::kMap, StatusCode::kNotFound, "shard-00001.bin: file not found"},
    {"SymlinkedShard", NoEdit,
     [](const std::string& dir) {
       const std::string p = dir + "/shard-00001.bin";
       ::rename(p.c_str(), (dir + "/elsewhere").c_str());
       ASSERT_EQ(::symlink("elsewhere", p.c_str()), 0);
     },
     Stage::kMap, StatusCode::kInvalidArgument, "shard-00001.bin: is a symbolic link"},
    {"ShardIsDirectory", NoEdit,
     [](const std::string& dir) {
       const std::string p = dir + "/shard-00000.bin";
       ::unlink(p.c_str());
       ::mkdir(p.c_str(), 0755);
     },
     Stage::kMap, StatusCode::kInvalidArgument,
     "shard-00000.bin: is a directory, not a regular file"},
    {"ShardNameWithSlash",
     [](TestArtifact& a) { a.manifest["shards"][0]["file"] = "../shard-00000.bin"; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "shards[0] file: unsafe shard file name \"../shard-00000.bin\""},
    {"ShardNameAbsolute", [](TestArtifact& a) { a.manifest["shards"][1]["file"] = "/etc/passwd"; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument, "unsafe shard file name \"/etc/passwd\""},
    {"ShardNameDotDot", [](TestArtifact& a) { a.manifest["shards"][1]["file"] = ".."; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument, "unsafe shard file name \"..\""},
    {"ShardNameIsManifest",
     [](TestArtifact& a) { a.manifest["shards"][0]["file"] = "manifest.json"; }, nullptr,
     Stage::kOpen, StatusCode::kInvalidArgument, "unsafe shard file name \"manifest.json\""},
    {"DuplicateShardName",
     [](TestArtifact& a) { a.manifest["shards"][1]["file"] = "shard-00000.bin"; }, nullptr,
     Stage::kOpen, StatusCode::kInvalidArgument, "\"shard-00000.bin\" is used twice"},
    {"CarriedFileNameTraversal",
     [](TestArtifact& a) { a.manifest["carried_files"][0]["file"] = "../tokenizer.json"; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "carried_files[0] file: unsafe file name"},
    {"MissingManifestWithStaging", NoEdit,
     [](const std::string& dir) {
       ::rename((dir + "/manifest.json").c_str(), (dir + "/manifest.json.x1b2.tmp").c_str());
     },
     Stage::kOpen, StatusCode::kNotFound,
     "incomplete artifact: a writer was interrupted and left staging files "
     "(manifest.json.x1b2.tmp)"},
    {"MissingCompletionMarker", [](TestArtifact& a) { a.manifest.Erase("complete"); },
     nullptr, Stage::kOpen, StatusCode::kFailedPrecondition,
     "incomplete artifact: the completion marker \"complete\": true is missing"},
    {"CompletionMarkerFalse", [](TestArtifact& a) { a.manifest["complete"] = false; },
     nullptr, Stage::kOpen, StatusCode::kFailedPrecondition, "is set to false"},
    // --- integrity (item 37, 43) ---
    {"WrongShardHash", [](TestArtifact& a) { a.shard_bytes[1][16400] ^= 0x01; }, nullptr,
     Stage::kVerify, StatusCode::kDataLoss, "shard-00001.bin: SHA-256 mismatch: manifest says"},
    {"WrongCarriedFileHash",
     [](TestArtifact& a) { a.carried_files[0].second[0] = '['; }, nullptr, Stage::kVerify,
     StatusCode::kDataLoss, "tokenizer.json: SHA-256 mismatch"},
    {"ManifestSelfHashMismatch", NoEdit,
     [](const std::string& dir) {
       std::string t = testing::ReadFileOrDie(dir + "/manifest.json");
       ReplaceFirst(t, "\"slimpack-test\"", "\"slimpack-tezt\"");  // not resealed
       testing::WriteFileOrDie(dir + "/manifest.json", t);
     },
     Stage::kOpen, StatusCode::kDataLoss, "manifest checksum mismatch: recorded"},
    // --- shard header ---
    {"ShardBadMagic", [](TestArtifact& a) { a.shard_bytes[0][0] = 'X'; }, nullptr,
     Stage::kMap, StatusCode::kInvalidArgument, "shard-00000.bin: bad magic"},
    {"ShardHeaderNewerMajor", [](TestArtifact& a) { a.shard_bytes[1][8] = 2; }, nullptr,
     Stage::kMap, StatusCode::kUnimplemented,
     "shard-00001.bin: shard format major version 2 was made by a newer tool"},
    {"ShardHeaderWrongIndex", [](TestArtifact& a) { a.shard_bytes[1][16] = 0; }, nullptr,
     Stage::kMap, StatusCode::kInvalidArgument, "header says shard index 0, manifest says 1"},
    // --- versions (item 41) ---
    {"NewerMajorVersion", [](TestArtifact& a) { a.manifest["format_version"]["major"] = 2; },
     nullptr, Stage::kOpen, StatusCode::kUnimplemented,
     "artifact format 2.0 was made by a newer tool"},
    {"UnknownRequiredFeature",
     [](TestArtifact& a) { a.manifest["required_features"].Push(J("sparse_v2")); }, nullptr,
     Stage::kOpen, StatusCode::kUnimplemented, "requires feature \"sparse_v2\""},
    {"WrongFormatName", [](TestArtifact& a) { a.manifest["format"] = "gguf"; }, nullptr,
     Stage::kOpen, StatusCode::kUnimplemented, "expected \"slimpack-shard\", found \"gguf\""},
    // --- JSON level (item 42) ---
    {"ManifestTooLarge", NoEdit,
     [](const std::string& dir) {
       std::string t = testing::ReadFileOrDie(dir + "/manifest.json");
       t += std::string((16u << 20) + 1 - t.size(), ' ');
       testing::WriteFileOrDie(dir + "/manifest.json", t);
     },
     Stage::kOpen, StatusCode::kResourceExhausted,
     "16777217 bytes exceeds the manifest size cap of 16777216 bytes"},
    {"ManifestTooDeep", [](TestArtifact& a) { a.manifest["producer"]["recipe"]["x"] = J::Raw(Deep(70)); },
     nullptr, Stage::kOpen, StatusCode::kResourceExhausted, "deeper than the limit of 64"},
    {"DuplicateJsonKey", NoEdit,
     EditManifestText([](std::string& t) {
       ReplaceFirst(t, "\"nbytes\": 64,", "\"nbytes\": 64, \"nbytes\": 64,");
     }),
     Stage::kOpen, StatusCode::kInvalidArgument, "duplicate key \"nbytes\""},
    {"ByteOrderMark", NoEdit, EditManifestText([](std::string& t) { t = "\xEF\xBB\xBF" + t; }),
     Stage::kOpen, StatusCode::kInvalidArgument, "byte order mark"},
    {"InvalidUtf8Name", NoEdit,
     EditManifestText([](std::string& t) { ReplaceFirst(t, "\"name\": \"d\"", "\"name\": \"d\xC0\xAF\""); }),
     Stage::kOpen, StatusCode::kInvalidArgument, "invalid UTF-8"},
    {"NaNOffset", [](TestArtifact& a) { Tensor(a, testing::kB)["offset"] = J::Raw("NaN"); },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument, "unexpected character 'N'"},
    {"NonIntegerOffset", [](TestArtifact& a) { Tensor(a, testing::kB)["offset"] = 16448.0; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "tensors[1] 'b' offset: expected an integer in [0, 2^53], found number 16448"},
    {"OffsetAbove2Pow53",
     [](TestArtifact& a) { Tensor(a, testing::kB)["offset"] = J::Raw("9007199254740993"); },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "offset: 9007199254740993 is outside [0, 2^53]"},
    {"NegativeDim",
     [](TestArtifact& a) { Tensor(a, testing::kB)["shape"][0] = -8; }, nullptr,
     Stage::kOpen, StatusCode::kInvalidArgument, "shape[0]: -8 is outside [0, 2^53]"},
    {"StringWhereIntegerExpected",
     [](TestArtifact& a) { Tensor(a, testing::kB)["nbytes"] = "32"; }, nullptr,
     Stage::kOpen, StatusCode::kInvalidArgument, "nbytes: expected an integer"},
    // --- tensors (items 38-40) ---
    {"MisalignedOffset", [](TestArtifact& a) { Tensor(a, testing::kB)["offset"] = 16456; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "tensors[1] 'b' offset: offset 16456 is not a multiple of 64"},
    {"OffsetInHeaderRegion", [](TestArtifact& a) { Tensor(a, testing::kA)["offset"] = 64; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument, "inside the shard header region"},
    {"OverlappingTensors", [](TestArtifact& a) { Tensor(a, testing::kB)["offset"] = 16384; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "tensors[1] 'b': range [16384, 16416) overlaps tensor 'a' ending at 16448"},
    {"HoleBetweenTensors", [](TestArtifact& a) { Tensor(a, testing::kB)["offset"] = 16512; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "offset 16512 leaves a hole of 64 bytes"},
    {"OutOfStorageOrder",
     [](TestArtifact& a) {
       J first = Tensor(a, testing::kA);
       Tensor(a, testing::kA) = Tensor(a, testing::kB);
       Tensor(a, testing::kB) = first;
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument, "tensors[0] 'b': offset 16448 leaves a hole"},
    {"OffsetPastEnd", [](TestArtifact& a) { Tensor(a, testing::kQ4Zp)["offset"] = 17024; },
     nullptr, Stage::kOpen, StatusCode::kOutOfRange,
     "range [17024, 17030) extends past the end of shard 'shard-00001.bin' (size 17024)"},
    {"TensorSpanningShards",
     [](TestArtifact& a) {
       J& d = Tensor(a, testing::kQ4Zp);
       d["dtype"] = "f32";
       d["shape"] = J::Array({J(200)});
       d["nbytes"] = 800;
       d["layout"] = J();
       d["layout"]["kind"] = "plain";
       a.manifest["tensors"][testing::kQ4].Erase("layout");
       a.manifest["tensors"][testing::kQ4]["layout"]["kind"] = "plain";
     },
     nullptr, Stage::kOpen, StatusCode::kOutOfRange, "a tensor cannot span shards"},
    {"ShardIndexOutOfRange", [](TestArtifact& a) { Tensor(a, testing::kD)["shard"] = 7; },
     nullptr, Stage::kOpen, StatusCode::kOutOfRange,
     "shard index 7 is out of range: the artifact has 2 shards"},
    {"ShardWithUnreferencedBytes",
     [](TestArtifact& a) {
       a.shard_bytes[1] += std::string(128, '\0');
       a.RehashShards();
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "shards[1] 'shard-00001.bin': size 17152 does not match its last tensor"},
    {"DuplicateTensorName", [](TestArtifact& a) { Tensor(a, testing::kB)["name"] = "a"; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "tensors[1] 'a': duplicate tensor name (first at tensors[0])"},
    {"UnknownDtype", [](TestArtifact& a) { Tensor(a, testing::kB)["dtype"] = "f8e4m3"; },
     nullptr, Stage::kOpen, StatusCode::kUnimplemented,
     "unknown dtype \"f8e4m3\" (supported: f32, f16, bf16"},
    {"NbytesNotNumelTimesSize", [](TestArtifact& a) { Tensor(a, testing::kB)["nbytes"] = 36; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "nbytes 36 does not match 8 elements of f32 (expected 32)"},
    {"Int4NbytesRoundsUp", [](TestArtifact& a) { Tensor(a, testing::kQ4Zp)["nbytes"] = 5; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "nbytes 5 does not match 12 elements of i4 (expected 6)"},
    {"ScaleWrongShape",
     [](TestArtifact& a) { Tensor(a, testing::kC)["layout"]["scale"] = "b"; }, nullptr,
     Stage::kOpen, StatusCode::kInvalidArgument, "tensor 'b' has shape [8], expected [3]"},
    {"ScaleMissingTensor",
     [](TestArtifact& a) { Tensor(a, testing::kQ4)["layout"]["scale"] = "nope"; }, nullptr,
     Stage::kOpen, StatusCode::kInvalidArgument, "scale: refers to missing tensor 'nope'"},
    {"ZeroPointWrongDtype",
     [](TestArtifact& a) { Tensor(a, testing::kQ4)["layout"]["zero_point"] = "q4.scale"; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "tensor 'q4.scale' has dtype f32, expected i4"},
    {"AxisOutOfRange", [](TestArtifact& a) { Tensor(a, testing::kQ4)["layout"]["axis"] = 2; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument, "axis 2 is out of range for rank 2"},
    {"UnknownLayout", [](TestArtifact& a) { Tensor(a, testing::kQ4)["layout"]["kind"] = "nf4"; },
     nullptr, Stage::kOpen, StatusCode::kUnimplemented, "unknown layout \"nf4\""},
    {"Int8GroupWiseWithoutFeature",
     [](TestArtifact& a) {
       Tensor(a, testing::kC)["layout"]["kind"] = "int8_groupwise";
       Tensor(a, testing::kC)["layout"]["group_size"] = 1;
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "layout int8_groupwise is used but required_features does not list \"int8_groupwise\""},
    {"F16ScaleWithoutFeature",
     [](TestArtifact& a) {
       Tensor(a, testing::kCScale)["dtype"] = "f16";
       Tensor(a, testing::kCScale)["nbytes"] = 6;
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "tensor 'c.scale' has dtype f16, expected f32"},
    {"BF16ScaleWithF16Feature",
     [](TestArtifact& a) {
       a.manifest["required_features"].Push(J("f16_scales"));
       Tensor(a, testing::kCScale)["dtype"] = "bf16";
       Tensor(a, testing::kCScale)["nbytes"] = 6;
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "tensor 'c.scale' has dtype bf16, expected f32 or f16"},
    {"UnknownPacking",
     [](TestArtifact& a) { Tensor(a, testing::kQ4)["layout"]["packing"] = "high_nibble_first"; },
     nullptr, Stage::kOpen, StatusCode::kUnimplemented, "unknown packing \"high_nibble_first\""},
    // --- graph references (item 40) ---
    {"GraphInitializerMissing",
     [](TestArtifact& a) {
       a.manifest["model"]["onnx"]["graph"]["initializers"].Push(J("ghost_weight"));
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "initializers: refers to missing tensor 'ghost_weight'"},
    {"GraphTensorAttributeMissing",
     [](TestArtifact& a) {
       a.manifest["model"]["onnx"]["graph"]["nodes"][1]["attributes"]["table"]["value"] = "gone";
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "nodes[1] 'add'.attributes 'table' value: refers to missing tensor 'gone'"},
    {"GraphNodeInputUndefined",
     [](TestArtifact& a) {
       a.manifest["model"]["onnx"]["graph"]["nodes"][0]["inputs"][1] = "unknown_w";
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "nodes[0] 'mm' inputs: input 'unknown_w' refers to a missing tensor"},
    {"SubgraphInputUndefined",
     [](TestArtifact& a) {
       a.manifest["model"]["onnx"]["graph"]["nodes"][2]["attributes"]["then_branch"]["value"]
                 ["nodes"][0]["inputs"][0] = "nowhere";
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument, "input 'nowhere' refers to a missing"},
    {"GraphOutputUndefined",
     [](TestArtifact& a) { a.manifest["model"]["onnx"]["graph"]["outputs"][0]["name"] = "zz"; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "graph output 'zz' is not defined"},
    {"MissingGraph", [](TestArtifact& a) { a.manifest["model"]["onnx"].Erase("graph"); },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument, "onnx graph: missing required key"},
    // --- graph order (spec.md section 6.1: nodes in topological order) ---
    {"NodesInReverseOrder", [](TestArtifact& a) { ReorderNodes(a, {1, 0, 2}); }, nullptr,
     Stage::kOpen, StatusCode::kInvalidArgument,
     "graph.nodes[0] 'add' inputs: node 'add' reads 'y' before any node defines it "
     "(nodes must be in topological order, spec.md section 6.1): 'y' is produced by "
     "the later node 'mm'"},
    {"UnnamedNodeOutOfOrder",
     [](TestArtifact& a) {
       MainGraph(a)["nodes"][1].Erase("name");
       ReorderNodes(a, {1, 0, 2});
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "node nodes[0] (Add) reads 'y' before any node defines it"},
    {"NodesFormTwoCycle",  // mm reads add's output, add reads mm's
     [](TestArtifact& a) { MainGraph(a)["nodes"][0]["inputs"][0] = "z"; }, nullptr,
     Stage::kOpen, StatusCode::kInvalidArgument,
     "node 'mm' reads 'z' before any node defines it (nodes must be in topological "
     "order, spec.md section 6.1): 'z' is produced by the later node 'add'"},
    {"NodeReadsItsOwnOutput", [](TestArtifact& a) { MainGraph(a)["nodes"][1]["inputs"][1] = "z"; },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "node 'add' reads 'z' before any node defines it (nodes must be in topological "
     "order, spec.md section 6.1): 'z' is an output of this node itself (a cycle)"},
    {"SubgraphReadsLaterOuterValue",  // If moved before mm, whose 'y' its branches read
     [](TestArtifact& a) { ReorderNodes(a, {2, 0, 1}); }, nullptr, Stage::kOpen,
     StatusCode::kInvalidArgument,
     "node 'id' reads 'y' before any node defines it (nodes must be in topological "
     "order, spec.md section 6.1): 'y' is produced by node 'mm' of an enclosing graph"},
    {"SubgraphNodesOutOfOrder",
     [](TestArtifact& a) {
       J& nodes = ThenBranch(a)["nodes"];
       J id2 = nodes[0];
       id2["name"] = "id2";
       id2["inputs"][0] = "t_out";
       id2["outputs"][0] = "t2";
       nodes = J::Array({id2, nodes[0]});
     },
     nullptr, Stage::kOpen, StatusCode::kInvalidArgument,
     "then_branch'.value[0].nodes[0] 'id2' inputs: node 'id2' reads 't_out' before any "
     "node defines it (nodes must be in topological order, spec.md section 6.1): "
     "'t_out' is produced by the later node 'id'"},
};

class CorruptionTest : public ::testing::TestWithParam<CorruptionCase> {};

TEST_P(CorruptionTest, FailsWithSpecificError) {
  const CorruptionCase& c = GetParam();
  testing::TempDir dir;
  TestArtifact art = TestArtifact::Build(testing::SampleSpec());
  c.edit(art);
  ASSERT_THAT(art.Write(dir.path()), IsOk());
  if (c.edit_dir) c.edit_dir(dir.path());

  auto opened = Artifact::Open(dir.path());
  if (c.stage == Stage::kOpen) {
    EXPECT_THAT(opened, StatusIs(c.code, HasSubstr(c.message)));
    return;
  }
  ASSERT_THAT(opened, IsOk()) << "open must not touch shards";
  Artifact& a = **opened;
  Status first_error;
  for (size_t i = 0; i < a.num_tensors() && first_error.ok(); ++i) {
    auto v = a.GetTensor(i);
    if (!v.ok()) first_error = v.status();
  }
  if (c.stage == Stage::kMap) {
    EXPECT_THAT(first_error, StatusIs(c.code, HasSubstr(c.message)));
    return;
  }
  EXPECT_THAT(first_error, IsOk());
  EXPECT_THAT(a.Verify(), StatusIs(c.code, HasSubstr(c.message)));
}

INSTANTIATE_TEST_SUITE_P(AllModes, CorruptionTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// The uncorrupted sample passes every stage, so each case above fails
// because of its own edit.
TEST(CorruptionBaselineTest, SampleArtifactIsValid) {
  testing::TempDir dir;
  TestArtifact art = TestArtifact::Build(testing::SampleSpec());
  ASSERT_THAT(art.Write(dir.path()), IsOk());
  auto opened = Artifact::Open(dir.path());
  ASSERT_THAT(opened, IsOk());
  for (size_t i = 0; i < (*opened)->num_tensors(); ++i) {
    EXPECT_THAT((*opened)->GetTensor(i), IsOk());
  }
  EXPECT_THAT((*opened)->Verify(), IsOk());
  EXPECT_EQ(art.shard_bytes.size(), 2u);
  EXPECT_EQ(art.shard_bytes[0].size(), 16704u);
  EXPECT_EQ(art.shard_bytes[1].size(), 17024u);
}

// What the order check must still accept: an omitted ("") input, and a
// subgraph whose nodes read the enclosing graph's inputs, initializers and
// earlier nodes' outputs as well as the outputs of its own earlier nodes.
TEST(CorruptionBaselineTest, GraphOrderAcceptsOmittedInputsAndOuterScopeReads) {
  testing::TempDir dir;
  TestArtifact art = TestArtifact::Build(testing::SampleSpec());
  MainGraph(art)["nodes"][0]["inputs"].Push(J(""));
  J& else_graph = MainGraph(art)["nodes"][2]["attributes"]["else_branch"]["value"];
  J e_add = else_graph["nodes"][0];
  e_add["name"] = "e_add";
  e_add["op_type"] = "Add";
  e_add["inputs"] = J::Array({J("x"), J("b")});
  e_add["outputs"] = J::Array({J("e1")});
  J e_sum = e_add;
  e_sum["name"] = "e_sum";
  e_sum["op_type"] = "Sum";
  e_sum["inputs"] = J::Array({J("e1"), J("y"), J("z"), J("a")});
  e_sum["outputs"] = J::Array({J("t_out")});
  else_graph["nodes"] = J::Array({e_add, e_sum});
  ASSERT_THAT(art.Write(dir.path()), IsOk());

  auto opened = Artifact::Open(dir.path());
  ASSERT_THAT(opened, IsOk());
  const auto& onnx = (*opened)->manifest().onnx;
  ASSERT_TRUE(onnx.has_value());
  EXPECT_EQ(onnx->graph.nodes[0].inputs.size(), 3u);
  const auto& else_branch = onnx->graph.nodes[2].attributes.at("else_branch");
  ASSERT_EQ(else_branch.graphs.size(), 1u);
  EXPECT_EQ(else_branch.graphs[0]->nodes.size(), 2u);
}

}  // namespace
}  // namespace slimpack::loader
