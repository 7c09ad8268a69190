// Artifact on valid input: manifest contents, O(1) lookup, zero-copy typed
// views, lazy mapping, the LRU memory budget, verify(), carried files and
// the graph as rebuilt from the manifest.
#include "formats/shard/loader/artifact.h"

#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shard/loader/loader_matchers.h"
#include "tests/shard/loader/sample_artifacts.h"
#include "tests/shard/loader/test_artifact_writer.h"

namespace slimpack::loader {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;
using testing::TestArtifact;

class ArtifactTest : public ::testing::Test {
 protected:
  void SetUp() override {
    art_ = TestArtifact::Build(testing::SampleSpec());
    ASSERT_THAT(art_.Write(dir_.path()), IsOk());
  }
  std::unique_ptr<Artifact> Open(const OpenOptions& options = {}) {
    auto a = Artifact::Open(dir_.path(), options);
    EXPECT_THAT(a, IsOk());
    return a.ok() ? std::move(a).value() : nullptr;
  }

  testing::TempDir dir_;
  TestArtifact art_;
};

TEST_F(ArtifactTest, ExposesManifestContents) {
  auto a = Open();
  ASSERT_NE(a, nullptr);
  const Manifest& m = a->manifest();
  EXPECT_EQ(m.version_major, 1u);
  EXPECT_EQ(m.producer_name, "slimpack-test");
  EXPECT_EQ(m.recipe_json, "{\n   \"name\": \"test\"\n  }");
  ASSERT_EQ(m.shards.size(), 2u);
  EXPECT_EQ(m.shards[1].file, "shard-00001.bin");
  EXPECT_EQ(m.shards[1].size, 17024u);
  ASSERT_EQ(a->num_tensors(), 9u);
  const TensorInfo* q4 = a->FindTensor("q4");
  ASSERT_NE(q4, nullptr);
  EXPECT_EQ(q4->dtype, DType::kI4);
  EXPECT_THAT(q4->shape, ElementsAre(4u, 10u));
  EXPECT_EQ(q4->numel, 40u);
  EXPECT_EQ(q4->nbytes, 20u);
  EXPECT_EQ(q4->shard, 1u);
  EXPECT_EQ(q4->offset, 16832u);
  EXPECT_EQ(q4->layout.kind, LayoutKind::kInt4GroupWise);
  EXPECT_EQ(q4->layout.group_size, 4u);
  EXPECT_EQ(a->tensor(static_cast<size_t>(q4->layout.scale)).name, "q4.scale");
  EXPECT_EQ(a->tensor(static_cast<size_t>(q4->layout.zero_point)).name, "q4.zp");
  EXPECT_EQ(a->FindTensor("missing"), nullptr);
  ASSERT_EQ(m.carried_files.size(), 1u);
  EXPECT_EQ(m.carried_files[0].file, "tokenizer.json");
}

TEST_F(ArtifactTest, RebuildsOnnxGraphWithResolvedReferences) {
  auto a = Open();
  ASSERT_NE(a, nullptr);
  const auto& onnx = a->manifest().onnx;
  ASSERT_TRUE(onnx.has_value());
  EXPECT_EQ(onnx->opset_imports.at(""), 17);
  const Graph& g = onnx->graph;
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.inputs[0].dims[1].symbol, "batch");
  EXPECT_EQ(g.inputs[0].dims[0].value, 1);
  ASSERT_EQ(g.initializers.size(), 2u);
  EXPECT_EQ(a->tensor(static_cast<size_t>(g.initializers[0])).name, "a");
  ASSERT_EQ(g.nodes.size(), 3u);
  const Node& add = g.nodes[1];
  EXPECT_EQ(add.op_type, "Add");
  EXPECT_EQ(add.attributes.at("alpha").floats, std::vector<double>{1.5});
  EXPECT_EQ(a->tensor(static_cast<size_t>(add.attributes.at("table").tensors[0])).name, "d");
  EXPECT_EQ(add.attributes.at("mode").strings[0], std::string("\xFF\x00", 2));
  const Attribute& then_branch = g.nodes[2].attributes.at("then_branch");
  ASSERT_EQ(then_branch.graphs.size(), 1u);
  EXPECT_EQ(then_branch.graphs[0]->nodes[0].inputs[0], "y");  // outer-scope value
}

TEST_F(ArtifactTest, TypedViewsAreZeroCopyAndAligned) {
  auto a = Open();
  ASSERT_NE(a, nullptr);
  auto view = a->GetTyped<float>("a");
  ASSERT_THAT(view, IsOk());
  ASSERT_EQ(view->size(), 16u);
  for (uint64_t i = 0; i < 16; ++i) EXPECT_EQ((*view)[i], static_cast<float>(i));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(view->data()) % 64, 0u);
  // The same bytes as the shard file at the manifest offset.
  EXPECT_EQ(std::memcmp(view->data(), art_.shard_bytes[0].data() + 16384, 64), 0);
  auto d = a->GetTyped<float>("d");
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ((*d)[99], 24.75f);
}

TEST_F(ArtifactTest, TypedViewChecksDtypeAndLayout) {
  auto a = Open();
  ASSERT_NE(a, nullptr);
  EXPECT_THAT(a->GetTyped<int32_t>("a"),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'a' has dtype f32, requested i32")));
  EXPECT_THAT(a->GetTyped<int8_t>("c"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("'c' is quantized")));
  EXPECT_THAT(a->GetTyped<float>("nope"),
              StatusIs(StatusCode::kNotFound, HasSubstr("no tensor named 'nope'")));
  auto zp = a->GetTyped<int8_t>("c.zp");
  ASSERT_THAT(zp, IsOk());
  EXPECT_EQ((*zp)[2], -5);
}

TEST_F(ArtifactTest, OpenReadsNoShardAndMapsLazily) {
  // Without its shards the manifest still opens: open never touches them.
  ASSERT_EQ(::unlink(dir_.File("shard-00001.bin").c_str()), 0);
  auto a = Open();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->mapped_shards(), 0u);
  EXPECT_THAT(a->GetTensor("a"), IsOk());
  EXPECT_EQ(a->mapped_shards(), 1u);
  EXPECT_THAT(a->GetTensor("d"),
              StatusIs(StatusCode::kNotFound,
                       HasSubstr("tensor 'd': " + dir_.File("shard-00001.bin"))));
}

TEST_F(ArtifactTest, MemoryBudgetUnmapsLeastRecentlyUsedShard) {
  OpenOptions options;
  options.memory_budget_bytes = 1;  // keeps only the shard just used
  auto a = Open(options);
  ASSERT_NE(a, nullptr);
  auto first = a->GetTyped<float>("a");
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(a->mapped_shards(), 1u);
  ASSERT_THAT(a->GetTensor("d"), IsOk());
  EXPECT_EQ(a->mapped_shards(), 1u);  // shard 0 dropped from the cache
  EXPECT_EQ(a->mapped_bytes(), 17024u - (16384u / PageSize()) * PageSize());
  // The live view still owns its mapping.
  EXPECT_EQ((*first)[15], 15.0f);
  // Touching shard 0 again maps it again.
  ASSERT_THAT(a->GetTensor("b"), IsOk());
  EXPECT_EQ(a->mapped_shards(), 1u);
}

TEST_F(ArtifactTest, UnlimitedBudgetKeepsAllShards) {
  auto a = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_THAT(a->GetTensor("a"), IsOk());
  ASSERT_THAT(a->GetTensor("d"), IsOk());
  EXPECT_EQ(a->mapped_shards(), 2u);
  EXPECT_THAT(a->Prefetch("q4"), IsOk());
}

TEST_F(ArtifactTest, ConcurrentFirstAccessIsSafe) {
  OpenOptions options;
  options.memory_budget_bytes = 1;  // forces eviction races too
  auto a = Open(options);
  ASSERT_NE(a, nullptr);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto v = a->GetTyped<float>((i + t) % 2 ? "a" : "d");
        if (!v.ok() || (*v)[1] == 0.0f) ++failures[static_cast<size_t>(t)];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_THAT(failures, ElementsAre(0, 0, 0, 0));
}

TEST_F(ArtifactTest, VerifyPassesOnIntactArtifact) {
  auto a = Open();
  ASSERT_NE(a, nullptr);
  EXPECT_THAT(a->Verify(), IsOk());
}

TEST_F(ArtifactTest, VerifyDetectsManifestChangedAfterOpen) {
  auto a = Open();
  ASSERT_NE(a, nullptr);
  TestArtifact other = art_;
  other.manifest["producer"]["version"] = "9.9.9";
  testing::WriteFileOrDie(dir_.File("manifest.json"), other.ManifestText());
  EXPECT_THAT(a->Verify(), StatusIs(StatusCode::kDataLoss,
                                    HasSubstr("manifest.json: manifest checksum mismatch")));
}

TEST_F(ArtifactTest, CarriedFilePath) {
  auto a = Open();
  ASSERT_NE(a, nullptr);
  auto path = a->CarriedFilePath("tokenizer.json");
  ASSERT_THAT(path, IsOk());
  EXPECT_EQ(*path, dir_.File("tokenizer.json"));
  EXPECT_EQ(testing::ReadFileOrDie(*path), "{\"version\": \"1.0\"}\n");
  EXPECT_THAT(a->CarriedFilePath("vocab.txt"), StatusIs(StatusCode::kNotFound, HasSubstr("vocab.txt")));
}

TEST_F(ArtifactTest, SkippingTheHashCheckStillValidatesEverythingElse) {
  std::string text = testing::ReadFileOrDie(dir_.File("manifest.json"));
  text.replace(text.find("\"slimpack-test\""), 15, "\"slimpack-tezt\"");
  testing::WriteFileOrDie(dir_.File("manifest.json"), text);
  OpenOptions options;
  options.check_manifest_hash = false;
  auto a = Artifact::Open(dir_.path(), options);
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ((*a)->manifest().producer_name, "slimpack-tezt");
  EXPECT_THAT((*a)->Verify(), StatusIs(StatusCode::kDataLoss, HasSubstr("checksum mismatch")));
}

TEST(ArtifactOpenTest, MissingDirectoryAndNonArtifact) {
  EXPECT_THAT(Artifact::Open("/nonexistent/slimpack/artifact"),
              StatusIs(StatusCode::kNotFound,
                       HasSubstr("/nonexistent/slimpack/artifact: artifact directory not found")));
  testing::TempDir empty;
  EXPECT_THAT(Artifact::Open(empty.path()),
              StatusIs(StatusCode::kNotFound,
                       HasSubstr("manifest.json: not found; this is not a slimpack artifact")));
  testing::WriteFileOrDie(empty.File("file"), "x");
  EXPECT_THAT(Artifact::Open(empty.File("file")),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not a directory")));
}

// A shard holding only zero-size tensors has an empty payload region and
// must not be mmapped with length 0.
TEST(ArtifactOpenTest, ZeroSizeTensors) {
  testing::TempDir dir;
  testing::TestArtifactSpec spec;
  spec.tensors = {{"empty", "f32", {0, 4}, {}}, {"scalar", "f32", {}, testing::F32Bytes({3.0f})}};
  TestArtifact art = TestArtifact::Build(spec);
  ASSERT_THAT(art.Write(dir.path()), IsOk());
  auto a = Artifact::Open(dir.path());
  ASSERT_THAT(a, IsOk());
  auto empty = (*a)->GetTyped<float>("empty");
  ASSERT_THAT(empty, IsOk());
  EXPECT_EQ(empty->size(), 0u);
  auto scalar = (*a)->GetTyped<float>("scalar");
  ASSERT_THAT(scalar, IsOk());
  EXPECT_EQ((*scalar)[0], 3.0f);
  EXPECT_THAT((*a)->Verify(), IsOk());
}

TEST(ArtifactOpenTest, EmptyArtifactHasNoShards) {
  testing::TempDir dir;
  TestArtifact art = TestArtifact::Build(testing::TestArtifactSpec());
  ASSERT_THAT(art.Write(dir.path()), IsOk());
  auto a = Artifact::Open(dir.path());
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ((*a)->num_tensors(), 0u);
  EXPECT_TRUE((*a)->manifest().shards.empty());
}

// Layer groups stay together in one shard, and a tensor larger than the cap
// gets a shard of its own (spec.md section 7, as the test writer plans it);
// the loader accepts the result.
TEST(ArtifactOpenTest, OversizedTensorGetsOwnShard) {
  testing::TempDir dir;
  testing::TestArtifactSpec spec;
  spec.shard_size_cap = 16384 + 1024;
  spec.tensors = {{"big", "u8", {4096}, testing::PatternBytes(4096, 1)},
                  {"l0.a", "u8", {300}, testing::PatternBytes(300, 2), 0},
                  {"l0.b", "u8", {300}, testing::PatternBytes(300, 3), 0},
                  {"l1.a", "u8", {700}, testing::PatternBytes(700, 4), 1}};
  TestArtifact art = TestArtifact::Build(spec);
  ASSERT_THAT(art.Write(dir.path()), IsOk());
  auto a = Artifact::Open(dir.path());
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ((*a)->FindTensor("big")->shard, 0u);
  EXPECT_EQ((*a)->FindTensor("l0.a")->shard, 1u);
  EXPECT_EQ((*a)->FindTensor("l0.b")->shard, 1u);
  EXPECT_EQ((*a)->FindTensor("l1.a")->shard, 2u);
  EXPECT_EQ((*a)->manifest().shards[0].size, 16384u + 4096u);
  auto l1 = (*a)->GetTyped<uint8_t>("l1.a");
  ASSERT_THAT(l1, IsOk());
  EXPECT_EQ(std::memcmp(l1->data(), testing::PatternBytes(700, 4).data(), 700), 0);
}

// The name table grows from empty (no Reserve) and still finds everything.
TEST(NameIndexTest, GrowsAndDetectsDuplicates) {
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back("t" + std::to_string(i * 7919));
  NameIndex index;
  EXPECT_EQ(index.Find("t0"), -1);
  int32_t existing = -1;
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_TRUE(index.Insert(names[i], static_cast<int32_t>(i), &existing));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(index.Find(names[i]), static_cast<int32_t>(i));
  }
  EXPECT_EQ(index.Find("t1"), -1);
  EXPECT_FALSE(index.Insert(names[500], 7, &existing));
  EXPECT_EQ(existing, 500);
}

}  // namespace
}  // namespace slimpack::loader
