// Sparsity in the artifact: the writer packs a 2:4 float weight (layout
// sparse_2_4 + u4 index tensor, required feature, sparsity records), the
// standalone loader expands it (C++ and C API) to exactly the writer's
// input, the reader densifies it, and a table of corrupted records is
// rejected at open with the specific code, naming the tensor and value.
#include <cstring>
#include <random>

#include "ir/float_convert.h"
#include "ir/sparse.h"
#include "formats/shard/loader/absl_adapter.h"
#include "formats/shard/loader/artifact.h"
#include "formats/shard/loader/slimpack_loader.h"
#include "formats/shard/reader/artifact_reader.h"
#include "formats/shard/writer/artifact_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/shard/writer/writer_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack {
namespace {

using ::slimpack::shard_writer::testing::ReadFile;
using ::slimpack::shard_writer::testing::RewriteManifest;
using ::slimpack::shard_writer::testing::TempDir;
using ::slimpack::shard_writer::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

ir::Tensor FloatTensor(const std::string& name, std::vector<int64_t> dims,
                       const std::vector<float>& v) {
  ir::Tensor t;
  t.name = name;
  t.dtype = ir::DType::kF32;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(std::vector<uint8_t>(
      reinterpret_cast<const uint8_t*>(v.data()), reinterpret_cast<const uint8_t*>(v.data() + v.size())));
  return t;
}

// "w24": [8, 16] 2:4 (packed); "wu": [4, 8] unstructured, 3 zeros per row
// (dense); "b": plain. Safetensors-origin (no graph).
ir::Model SparseModel(const std::string& dir) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> w24(8 * 16), wu(4 * 8), b(8);
  for (size_t g = 0; g < w24.size() / 4; ++g) {
    const int skip = static_cast<int>(g % 6);  // pairs (0,1) (0,2) ... all 6
    static const int kPairs[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
    for (int k : kPairs[skip]) w24[g * 4 + static_cast<size_t>(k)] = d(rng) + 3.0f;
  }
  for (size_t i = 0; i < wu.size(); ++i) wu[i] = i % 8 < 3 ? 0.0f : d(rng) + 3.0f;
  for (float& x : b) x = d(rng);
  ir::Model m;
  m.source_format = ir::SourceFormat::kSafetensors;
  m.source_path = dir;
  m.graph.name = "sparse";
  ir::Tensor t24 = FloatTensor("w24", {8, 16}, w24);
  t24.sparsity.pattern = ir::SparsityPattern::k2of4;
  t24.sparsity.criterion = "wanda";
  t24.layer = 0;
  ir::Tensor tu = FloatTensor("wu", {4, 8}, wu);
  tu.sparsity.pattern = ir::SparsityPattern::kUnstructured;
  tu.sparsity.criterion = "magnitude";
  (void)m.graph.AddInitializer(t24);
  (void)m.graph.AddInitializer(tu);
  (void)m.graph.AddInitializer(FloatTensor("b", {8}, b));
  return m;
}

TEST(SparseArtifactTest, LoaderExpandsExactlyWhatTheWriterWasGiven) {
  TempDir dir;
  const std::string out = dir.File("out");
  const ir::Model model = SparseModel(dir.path());
  ASSERT_THAT(shard_writer::WriteArtifact(model, out, {}), IsOk());

  nlohmann::json m = nlohmann::json::parse(ReadFile(out + "/manifest.json"));
  EXPECT_EQ(m["required_features"], nlohmann::json::array({"sparse_2_4"}));
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& t : m["tensors"]) by_name[t["name"].get<std::string>()] = t;
  EXPECT_EQ(by_name["w24"]["layout"],
            (nlohmann::json{{"axis", 1}, {"indices", "w24.sparse_indices"}, {"kind", "sparse_2_4"}}));
  EXPECT_EQ(by_name["w24"]["nbytes"], 8 * 8 * 4);
  EXPECT_EQ(by_name["w24"]["sparsity"],
            (nlohmann::json{{"axis", 1}, {"criterion", "wanda"}, {"pattern", "2:4"},
                            {"ratio", 0.5}, {"storage", "sparse_2_4"}, {"zeros", 64}}));
  EXPECT_EQ(by_name["w24.sparse_indices"]["dtype"], "u4");
  EXPECT_EQ(by_name["w24.sparse_indices"]["shape"], (nlohmann::json{8, 4}));
  EXPECT_EQ(by_name["w24.sparse_indices"]["layer"], 0);
  EXPECT_EQ(by_name["wu"]["layout"], (nlohmann::json{{"kind", "plain"}}));
  EXPECT_EQ(by_name["wu"]["sparsity"]["storage"], "dense");
  EXPECT_EQ(by_name["wu"]["sparsity"]["zeros"], 12);
  EXPECT_EQ(by_name["wu"]["sparsity"]["ratio"], 0.375);
  EXPECT_FALSE(by_name["b"].contains("sparsity"));

  auto a = loader::Artifact::Open(out);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const ir::Tensor& w24 = *model.graph.FindInitializer("w24");
  std::vector<uint8_t> dense(w24.data.size(), 0xEE);
  ASSERT_TRUE((*a)->ExpandSparse("w24", dense.data(), dense.size()).ok());
  EXPECT_EQ(0, std::memcmp(dense.data(), w24.data.data(), dense.size()));
  auto f32 = (*a)->DequantizeToF32("w24");
  ASSERT_TRUE(f32.ok());
  EXPECT_EQ(0, std::memcmp(f32->data(), w24.data.data(), dense.size()));
  const loader::TensorInfo* info = (*a)->FindTensor("w24");
  EXPECT_TRUE(info->sparsity.present && info->sparsity.two_of_four && info->sparsity.packed);
  EXPECT_EQ(info->sparsity.criterion, "wanda");
  EXPECT_THAT(loader::ToAbslStatus((*a)->ExpandSparse("w24", dense.data(), dense.size() - 4)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the dense tensor needs 512")));
  EXPECT_THAT(loader::ToAbslStatus((*a)->ExpandSparse("wu", dense.data(), 128)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not sparse_2_4")));

  // The C API.
  slimpack_artifact* c = nullptr;
  ASSERT_EQ(slimpack_artifact_open(out.c_str(), nullptr, &c), SLIMPACK_OK);
  uint64_t index = 0;
  ASSERT_EQ(slimpack_artifact_find_tensor(c, "w24", &index), SLIMPACK_OK);
  slimpack_tensor_info ci;
  ASSERT_EQ(slimpack_artifact_tensor_info(c, index, &ci), SLIMPACK_OK);
  EXPECT_EQ(ci.layout, SLIMPACK_LAYOUT_SPARSE_2_4);
  std::vector<uint8_t> c_dense(dense.size(), 0xEE);
  ASSERT_EQ(slimpack_artifact_expand_sparse(c, index, c_dense.data(), c_dense.size()), SLIMPACK_OK);
  EXPECT_EQ(0, std::memcmp(c_dense.data(), w24.data.data(), dense.size()));
  EXPECT_EQ(slimpack_artifact_expand_sparse(c, index, c_dense.data(), 3), SLIMPACK_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(slimpack_last_error_message()), HasSubstr("'w24'"));
  slimpack_artifact_close(c);

  // The reader densifies: the model is the writer's input, index tensor gone.
  auto back = shard_reader::ReadArtifactModel(out);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->graph.initializers().size(), 3u);
  const ir::Tensor* r24 = back->graph.FindInitializer("w24");
  ASSERT_NE(r24, nullptr);
  EXPECT_EQ(r24->dims, w24.dims);
  EXPECT_TRUE(r24->sparsity == w24.sparsity);
  ASSERT_EQ(r24->data.size(), w24.data.size());
  EXPECT_EQ(0, std::memcmp(r24->data.data(), w24.data.data(), w24.data.size()));
  EXPECT_TRUE(back->graph.FindInitializer("wu")->sparsity ==
              model.graph.FindInitializer("wu")->sparsity);
}

TEST(SparseArtifactTest, HalfPrecisionPackedAndUnpackedWhenAsked) {
  TempDir dir;
  const ir::Model model = SparseModel(dir.path());
  shard_writer::ArtifactOptions f16;
  f16.encoder = shard_writer::FloatCastEncoder(ir::DType::kF16);
  ASSERT_THAT(shard_writer::WriteArtifact(model, dir.File("f16"), f16), IsOk());
  auto a = loader::Artifact::Open(dir.File("f16"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->FindTensor("w24")->nbytes, 8u * 8u * 2u);
  auto f32 = (*a)->DequantizeToF32("w24");
  ASSERT_TRUE(f32.ok());
  const float* want = reinterpret_cast<const float*>(model.graph.FindInitializer("w24")->data.data());
  for (size_t i = 0; i < f32->size(); ++i) {
    EXPECT_EQ((*f32)[i], ir::F16ToF32(ir::F32ToF16(want[i]))) << i;
  }
  shard_writer::ArtifactOptions dense;
  dense.pack_sparse_2_4 = false;
  ASSERT_THAT(shard_writer::WriteArtifact(model, dir.File("dense"), dense), IsOk());
  nlohmann::json m = nlohmann::json::parse(ReadFile(dir.File("dense") + "/manifest.json"));
  EXPECT_EQ(m["required_features"], nlohmann::json::array());
  for (const auto& t : m["tensors"]) {
    if (t["name"] == "w24") {
      EXPECT_EQ(t["layout"]["kind"], "plain");
      EXPECT_EQ(t["sparsity"]["storage"], "dense");
    }
  }
}

TEST(SparseArtifactTest, WriterRefusesARecordTheDataBreaks) {
  TempDir dir;
  ir::Model model = SparseModel(dir.path());
  ir::Tensor* w = model.graph.FindMutableInitializer("w24");
  // Row 5's group at columns 4..7: all four nonzero. (Floats edited as
  // floats: GCC 12 warned of an overflow on byte offsets into the copy.)
  std::vector<float> values(w->data.size() / sizeof(float));
  std::memcpy(values.data(), w->data.data(), w->data.size());
  for (int k = 0; k < 4; ++k) values.at(16 * 5 + 4 + k) = 1.0f;
  std::vector<uint8_t> bytes(w->data.size());
  std::memcpy(bytes.data(), values.data(), bytes.size());
  w->data = ir::TensorData::Owned(bytes);
  EXPECT_THAT(shard_writer::WriteArtifact(model, dir.File("out"), {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'w24'"), HasSubstr("3 or more nonzeros"))));
}

// One edit of a valid manifest per row (self-hash recomputed): the loader
// rejects it at open with the code, naming the tensor and the value.
struct BadRecord {
  const char* label;
  void (*edit)(nlohmann::json& manifest, nlohmann::json& w24, nlohmann::json& wu);
  absl::StatusCode code;
  std::vector<const char*> message;
};

class BadSparsityRecordTest : public ::testing::TestWithParam<BadRecord> {};

TEST_P(BadSparsityRecordTest, RejectedAtOpen) {
  TempDir dir;
  const std::string out = dir.File("out");
  ASSERT_THAT(shard_writer::WriteArtifact(SparseModel(dir.path()), out, {}), IsOk());
  nlohmann::json m = nlohmann::json::parse(ReadFile(out + "/manifest.json"));
  nlohmann::json *w24 = nullptr, *wu = nullptr;
  for (auto& t : m["tensors"]) {
    if (t["name"] == "w24") w24 = &t;
    if (t["name"] == "wu") wu = &t;
  }
  ASSERT_TRUE(w24 && wu);
  GetParam().edit(m, *w24, *wu);
  ASSERT_NO_FATAL_FAILURE(RewriteManifest(out, m));
  auto a = loader::Artifact::Open(out);
  ASSERT_FALSE(a.ok());
  const absl::Status s = loader::ToAbslStatus(a.status());
  EXPECT_EQ(s.code(), GetParam().code) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(out));
  for (const char* part : GetParam().message) EXPECT_THAT(std::string(s.message()), HasSubstr(part));
}

using J = nlohmann::json;
INSTANTIATE_TEST_SUITE_P(
    Table, BadSparsityRecordTest,
    ::testing::Values(
        BadRecord{"UnknownPattern", [](J&, J& w, J&) { w["sparsity"]["pattern"] = "4:8"; },
                  absl::StatusCode::kUnimplemented, {"'w24'", "4:8", "unstructured, 2:4"}},
        BadRecord{"UnknownStorage", [](J&, J&, J& u) { u["sparsity"]["storage"] = "csr"; },
                  absl::StatusCode::kUnimplemented, {"'wu'", "csr"}},
        BadRecord{"StorageVsLayout", [](J&, J&, J& u) { u["sparsity"]["storage"] = "sparse_2_4"; },
                  absl::StatusCode::kInvalidArgument, {"'wu'", "disagrees with the tensor's layout"}},
        BadRecord{"PackedButUnstructured",
                  [](J&, J& w, J&) { w["sparsity"]["pattern"] = "unstructured"; },
                  absl::StatusCode::kInvalidArgument, {"'w24'", "needs pattern \"2:4\""}},
        BadRecord{"ZerosAboveNumel", [](J&, J&, J& u) { u["sparsity"]["zeros"] = 33; },
                  absl::StatusCode::kInvalidArgument, {"'wu'", "33 zeros", "32 elements"}},
        BadRecord{"TwoOfFourBelowHalf",
                  [](J&, J& w, J&) {
                    w["sparsity"]["zeros"] = 10;
                    w["sparsity"]["ratio"] = 10.0 / 128;
                  },
                  absl::StatusCode::kInvalidArgument, {"'w24'", "at least half", "10 zeros"}},
        BadRecord{"RatioDisagrees", [](J&, J&, J& u) { u["sparsity"]["ratio"] = 0.5; },
                  absl::StatusCode::kInvalidArgument, {"'wu'", "ratio 0.5", "12 / 32"}},
        BadRecord{"AxisOutOfRange", [](J&, J&, J& u) { u["sparsity"]["axis"] = 2; },
                  absl::StatusCode::kInvalidArgument, {"'wu'", "axis 2"}},
        BadRecord{"MissingRecord", [](J&, J& w, J&) { w.erase("sparsity"); },
                  absl::StatusCode::kInvalidArgument, {"'w24'", "needs a \"sparsity\" record"}},
        BadRecord{"PackedNbytes", [](J&, J& w, J&) { w["nbytes"] = 512; },
                  absl::StatusCode::kInvalidArgument, {"'w24'", "nbytes 512", "2:4 packed", "256"}},
        BadRecord{"IndicesShape",
                  [](J&, J& w, J&) { w["layout"]["indices"] = "wu"; },
                  absl::StatusCode::kInvalidArgument, {"'w24'", "dtype f32, expected u4"}},
        BadRecord{"IndicesMissing",
                  [](J&, J& w, J&) { w["layout"]["indices"] = "nope"; },
                  absl::StatusCode::kInvalidArgument, {"'w24'", "missing tensor 'nope'"}},
        BadRecord{"PackedAxis", [](J&, J& w, J&) { w["layout"]["axis"] = 0; },
                  absl::StatusCode::kUnimplemented, {"'w24'", "axis 1 only"}},
        BadRecord{"PackedDtype", [](J&, J& w, J&) { w["dtype"] = "u32"; },
                  absl::StatusCode::kInvalidArgument, {"'w24'", "f32, f16 or bf16, found u32"}},
        BadRecord{"UnknownFeature",
                  [](J& m, J&, J&) { m["required_features"].push_back("sparse_4_8"); },
                  absl::StatusCode::kUnimplemented, {"sparse_4_8", "supported features: f16_scales, fp8_block_rows, fp8_e4m3, ggml_blocks, int8_groupwise, sparse_2_4"}}),
    [](const auto& info) { return std::string(info.param.label); });

TEST(SparseArtifactTest, CorruptIndexNibbleIsAnErrorOnExpand) {
  TempDir dir;
  const std::string out = dir.File("out");
  ASSERT_THAT(shard_writer::WriteArtifact(SparseModel(dir.path()), out, {}), IsOk());
  auto a = loader::Artifact::Open(out);
  ASSERT_TRUE(a.ok());
  const loader::TensorInfo* idx = (*a)->FindTensor("w24.sparse_indices");
  const std::string shard = out + "/" + (*a)->manifest().shards[idx->shard].file;
  std::string bytes = ReadFile(shard);
  bytes[idx->offset] = static_cast<char>(0x0F);  // group 0: positions 3, 3
  a->reset();
  WriteFile(shard, bytes);
  loader::OpenOptions no_hash;
  auto b = loader::Artifact::Open(out, no_hash);
  ASSERT_TRUE(b.ok());
  std::vector<uint8_t> dense(128 * 4);
  EXPECT_THAT(loader::ToAbslStatus((*b)->ExpandSparse("w24", dense.data(), dense.size())),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'w24'"), HasSubstr("group 0"), HasSubstr("positions 3, 3"))));
  EXPECT_EQ(loader::ToAbslStatus((*b)->Verify()).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace slimpack
