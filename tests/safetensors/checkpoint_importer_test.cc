// ImportSafetensors on generated checkpoints: sharded BF16 llama with an
// index, single files, directory resolution, side files and warnings.
#include "formats/safetensors/checkpoint_importer.h"

#include <unistd.h>

#include <cstring>

#include "ir/verifier.h"
#include "formats/safetensors/safetensors_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::safetensors {
namespace {

using ::slimpack::safetensors::testing::IndexJson;
using ::slimpack::safetensors::testing::MakeTensor;
using ::slimpack::safetensors::testing::ReadWholeFile;
using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::TinyDecoder;
using ::slimpack::safetensors::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// Writes `tensors` round-robin into `shards` files plus the index; returns
// the tensor -> shard map.
std::map<std::string, std::string> WriteSharded(
    const TempDir& dir, const std::vector<ir::Tensor>& tensors, int shards) {
  std::vector<std::vector<ir::Tensor>> parts(shards);
  std::map<std::string, std::string> weight_map;
  uint64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    int s = static_cast<int>(i % shards);
    parts[s].push_back(tensors[i]);
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", s + 1,
                  shards);
    weight_map[tensors[i].name] = name;
    total += tensors[i].data.size();
  }
  for (int s = 0; s < shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", s + 1,
                  shards);
    EXPECT_THAT(
        WriteSafetensorsFile(dir.File(name), parts[s], {{"format", "pt"}}),
        IsOk());
  }
  WriteFile(dir.File("model.safetensors.index.json"),
            IndexJson(weight_map, total));
  return weight_map;
}

TEST(CheckpointImporterTest, ShardedBf16LlamaImportsWithRolesAndSideFiles) {
  TempDir dir;
  TinyDecoder d;
  const std::vector<ir::Tensor> tensors = d.Tensors();
  const auto weight_map = WriteSharded(dir, tensors, 3);
  WriteFile(dir.File("config.json"), d.ConfigJson());
  WriteFile(dir.File("tokenizer.json"), "{}");
  WriteFile(dir.File("generation_config.json"), "{}");
  WriteFile(dir.File("README.md"), "not carried");

  for (const std::string& path :
       {dir.path(), dir.File("model.safetensors.index.json")}) {
    SCOPED_TRACE(path);
    auto model = ImportSafetensors(path);
    ASSERT_THAT(model, IsOk());
    EXPECT_EQ(model->source_format, ir::SourceFormat::kSafetensors);
    EXPECT_TRUE(model->graph.nodes.empty());
    EXPECT_THAT(model->warnings, IsEmpty());
    EXPECT_THAT(ir::VerifyModel(*model), IsOk());
    EXPECT_THAT(model->input_files,
                ElementsAre(dir.File("model.safetensors.index.json"),
                            dir.File("model-00001-of-00003.safetensors"),
                            dir.File("model-00002-of-00003.safetensors"),
                            dir.File("model-00003-of-00003.safetensors"),
                            dir.File("config.json")));
    EXPECT_THAT(model->carried_files,
                ElementsAre(dir.File("tokenizer.json"),
                            dir.File("generation_config.json"),
                            dir.File("config.json")));
    EXPECT_EQ(model->metadata_props.at("format"), "pt");
    ASSERT_TRUE(model->architecture.has_value());
    EXPECT_EQ(model->architecture->model_type, "llama");
    EXPECT_EQ(model->architecture->num_kv_heads, 1);
    EXPECT_EQ(model->architecture->config_json, d.ConfigJson());

    const auto& inits = model->graph.initializers();
    ASSERT_EQ(inits.size(), tensors.size());
    EXPECT_TRUE(std::is_sorted(inits.begin(), inits.end(),
                               [](const ir::Tensor& a, const ir::Tensor& b) {
                                 return a.name < b.name;
                               }));
    std::map<std::string, std::string> file_bytes;
    for (const ir::Tensor& want : tensors) {
      SCOPED_TRACE(want.name);
      const ir::Tensor* got = model->graph.FindInitializer(want.name);
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(got->dtype, ir::DType::kBF16);
      EXPECT_EQ(got->dims, want.dims);
      EXPECT_TRUE(got->data.is_view());
      ASSERT_EQ(got->data.size(), want.data.size());
      EXPECT_EQ(
          std::memcmp(got->data.data(), want.data.data(), want.data.size()), 0);
      // Provenance names the shard from the index and the byte offset there.
      const std::string shard = dir.File(weight_map.at(want.name));
      EXPECT_EQ(got->provenance.file, shard);
      if (!file_bytes.count(shard)) file_bytes[shard] = ReadWholeFile(shard);
      EXPECT_EQ(
          file_bytes[shard].compare(
              static_cast<size_t>(got->provenance.offset), want.data.size(),
              reinterpret_cast<const char*>(want.data.data()),
              want.data.size()),
          0);
    }
    const ir::Tensor* q =
        model->graph.FindInitializer("model.layers.1.self_attn.q_proj.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->role, ir::WeightRole::kQProj);
    EXPECT_EQ(q->layer, 1);
    EXPECT_EQ(model->graph.FindInitializer("lm_head.weight")->role,
              ir::WeightRole::kLmHead);
  }
}

TEST(CheckpointImporterTest, ShardsMayBeSymlinksAsInTheHubCache) {
  // HF cache snapshots link every file to ../../blobs/<hash>.
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.File("blobs").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(dir.File("snap").c_str(), 0755), 0);
  ASSERT_THAT(
      WriteSafetensorsFile(dir.File("blobs/abc123"),
                           {MakeTensor("w", ir::DType::kU8, {2}, {1, 2})}),
      IsOk());
  ASSERT_EQ(
      ::symlink("../blobs/abc123", dir.File("snap/model.safetensors").c_str()),
      0);
  auto model = ImportSafetensors(dir.File("snap"));
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->graph.initializers().size(), 1u);
  EXPECT_THAT(model->input_files,
              ElementsAre(dir.File("snap/model.safetensors")));
}

TEST(CheckpointImporterTest, SingleFileWithoutConfigWarns) {
  TempDir dir;
  ASSERT_THAT(
      WriteSafetensorsFile(dir.File("model.safetensors"),
                           {MakeTensor("b", ir::DType::kU8, {1}, {1}),
                            MakeTensor("a", ir::DType::kI16, {1}, {2, 0})}),
      IsOk());
  for (const std::string& path : {dir.path(), dir.File("model.safetensors")}) {
    auto model = ImportSafetensors(path);
    ASSERT_THAT(model, IsOk());
    EXPECT_FALSE(model->architecture.has_value());
    EXPECT_THAT(model->warnings,
                ElementsAre(HasSubstr("no config.json beside " +
                                      dir.File("model.safetensors"))));
    ASSERT_EQ(model->graph.initializers().size(), 2u);
    EXPECT_EQ(model->graph.initializers()[0].name, "a");
    EXPECT_EQ(model->graph.name, "model");
    EXPECT_THAT(model->carried_files, IsEmpty());
    EXPECT_THAT(model->input_files, ElementsAre(dir.File("model.safetensors")));
  }
}

TEST(CheckpointImporterTest,
     UnknownArchitectureImportsPlainWeightsWithWarning) {
  TempDir dir;
  ASSERT_THAT(
      WriteSafetensorsFile(dir.File("weights.safetensors"),
                           {MakeTensor("h.0.attn.c_attn.weight",
                                       ir::DType::kF32, {1}, {0, 0, 128, 63})}),
      IsOk());
  WriteFile(dir.File("config.json"), R"({"model_type":"gpt2","n_layer":1})");
  auto model = ImportSafetensors(dir.path());  // the only .safetensors file
  ASSERT_THAT(model, IsOk());
  ASSERT_TRUE(model->architecture.has_value());
  EXPECT_FALSE(model->architecture->known);
  EXPECT_THAT(
      model->warnings,
      ElementsAre(HasSubstr("model_type 'gpt2' is not a known family")));
  EXPECT_EQ(model->graph.initializers()[0].role, ir::WeightRole::kUnknown);
  EXPECT_THAT(model->carried_files, ElementsAre(dir.File("config.json")));
}

// F8_E4M3 is read only to be scaled by an FP8 quantization_config; without
// one the bytes would be neither a float nor a code, so they are refused.
TEST(CheckpointImporterTest, Fp8TensorsWithoutAnFp8ConfigAreRefused) {
  TempDir dir;
  const std::string header =
      R"({"m.weight":{"dtype":"F8_E4M3","shape":[2,2],"data_offsets":[0,4]}})";
  WriteFile(dir.File("model.safetensors"),
            safetensors::testing::RawSafetensors(header, std::string("\x38\x40\xb8\x00", 4)));
  EXPECT_THAT(ImportSafetensors(dir.path()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr(dir.File("model.safetensors")),
                                        HasSubstr("tensor 'm.weight' has dtype F8_E4M3"),
                                        HasSubstr("has no quantization_config"))));
  WriteFile(dir.File("config.json"),
            R"({"model_type":"gpt2","quantization_config":{"quant_method":"gptq","bits":4,)"
            R"("group_size":128}})");
  // An integer scheme's config finds none of its packed tensors first.
  EXPECT_THAT(ImportSafetensors(dir.path()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr(dir.File("config.json")),
                                        HasSubstr("no tensor is named '<module>.qweight'"))));
}

TEST(CheckpointImporterTest, AmbiguousDirectoryAsksForAFile) {
  TempDir dir;
  for (const char* n : {"x.safetensors", "y.safetensors"}) {
    ASSERT_THAT(WriteSafetensorsFile(
                    dir.File(n), {MakeTensor("w", ir::DType::kU8, {1}, {1})}),
                IsOk());
  }
  EXPECT_THAT(
      ImportSafetensors(dir.path()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("ambiguous checkpoint, 2 candidates (x.safetensors, "
                         "y.safetensors, ...)")));
}

TEST(CheckpointImporterTest, TotalSizeMismatchIsAWarning) {
  TempDir dir;
  ASSERT_THAT(
      WriteSafetensorsFile(dir.File("s1.safetensors"),
                           {MakeTensor("w", ir::DType::kU8, {3}, {1, 2, 3})}),
      IsOk());
  WriteFile(dir.File("model.safetensors.index.json"),
            IndexJson({{"w", "s1.safetensors"}}, 99));
  auto model = ImportSafetensors(dir.path());
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(model->warnings,
              ::testing::Contains(HasSubstr(
                  "metadata.total_size 99 differs from the 3 bytes")));
}

TEST(CheckpointImporterTest, ConflictingShardMetadataKeepsFirstAndWarns) {
  TempDir dir;
  ASSERT_THAT(WriteSafetensorsFile(dir.File("a.safetensors"),
                                   {MakeTensor("w", ir::DType::kU8, {1}, {1})},
                                   {{"format", "pt"}, {"step", "1"}}),
              IsOk());
  ASSERT_THAT(WriteSafetensorsFile(dir.File("b.safetensors"),
                                   {MakeTensor("x", ir::DType::kU8, {1}, {2})},
                                   {{"format", "mlx"}}),
              IsOk());
  WriteFile(dir.File("model.safetensors.index.json"),
            IndexJson({{"w", "a.safetensors"}, {"x", "b.safetensors"}}, 2));
  auto model = ImportSafetensors(dir.path() + "/");  // trailing slash is fine
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->metadata_props, (std::map<std::string, std::string>{
                                       {"format", "pt"}, {"step", "1"}}));
  EXPECT_THAT(
      model->input_files,
      ElementsAre(dir.File("model.safetensors.index.json"),
                  dir.File("a.safetensors"), dir.File("b.safetensors")));
  EXPECT_THAT(model->warnings, ::testing::Contains(HasSubstr(
                                   dir.File("b.safetensors") +
                                   ": __metadata__ 'format' = 'mlx' differs")));
}

TEST(CheckpointImporterTest, ImportIsDeterministic) {
  TempDir dir;
  TinyDecoder d;
  d.model_type = "qwen2";
  d.biases = true;
  WriteSharded(dir, d.Tensors(), 2);
  WriteFile(dir.File("config.json"), d.ConfigJson());
  auto a = ImportSafetensors(dir.path());
  auto b = ImportSafetensors(dir.path());
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_EQ(a->graph.initializers().size(), b->graph.initializers().size());
  for (size_t i = 0; i < a->graph.initializers().size(); ++i) {
    EXPECT_EQ(a->graph.initializers()[i].name, b->graph.initializers()[i].name);
    EXPECT_EQ(a->graph.initializers()[i].role, b->graph.initializers()[i].role);
  }
  EXPECT_EQ(a->input_files, b->input_files);
  EXPECT_THAT(a->warnings, IsEmpty());
}

}  // namespace
}  // namespace slimpack::safetensors
