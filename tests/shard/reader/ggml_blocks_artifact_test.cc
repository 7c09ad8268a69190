// The ggml_blocks layout end to end (spec.md "ggml_blocks"): a weight stored
// as ggml's own block bytes (encoded by formats/gguf's reference encoders)
// is written, described in the manifest, read back with its bytes intact,
// run by the interpreter as its decoded values, and decoded by the
// standalone loader (C++ and C API) bit for bit as the IR's reference
// decoder and ggml's DequantizeRow do. Random bytes (every bit pattern,
// not only what an encoder writes) decode identically in the loader and
// the IR. Malformed ggml_blocks entries in a manifest are refused at open,
// and the IR refuses an inconsistent layout naming the tensor.
#include <cmath>
#include <cstring>
#include <random>

#include "export/gguf_blocks.h"
#include "export/gguf_llama.h"
#include "formats/gguf/ggml_blocks.h"
#include "formats/gguf/gguf_import.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "formats/shard/loader/artifact.h"
#include "formats/shard/loader/dequantize.h"
#include "formats/shard/loader/slimpack_loader.h"
#include "formats/shard/reader/artifact_reader.h"
#include "formats/shard/writer/artifact_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ggml_blocks.h"
#include "ir/quant.h"
#include "ir/verifier.h"
#include "nlohmann/json.hpp"
#include "runtime/interpreter.h"
#include "tests/shard/reader/gemm_fixture.h"
#include "tests/shard/writer/writer_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::shard_reader {
namespace {

using ::slimpack::shard_writer::testing::ReadFile;
using ::slimpack::shard_writer::testing::RewriteManifest;
using ::slimpack::shard_writer::testing::TempDir;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kRows = 4, kCols = 512, kBatch = 2;

std::vector<float> Normal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  v[3] = 0.4f;  // an outlier, as real weights have
  return v;
}

// "w" [kRows, kCols] encoded row by row in `type` (with an importance
// vector, so the K types take their weighted searches).
ir::Tensor BlockWeight(ir::GgmlType type) {
  const std::vector<float> w = Normal(kRows * kCols, 11);
  std::vector<float> importance(kCols);
  for (int64_t c = 0; c < kCols; ++c) importance[c] = 1.0f + static_cast<float>(c % 7);
  const uint64_t row_bytes = *ir::GgmlRowBytes(type, kCols);
  std::vector<uint8_t> bytes(row_bytes * kRows);
  for (int64_t r = 0; r < kRows; ++r) {
    EXPECT_THAT(gguf::QuantizeRow(static_cast<gguf::TensorType>(type), w.data() + r * kCols,
                                  kCols, importance.data(), bytes.data() + r * row_bytes),
                IsOk());
  }
  ir::Tensor t;
  t.name = "w";
  t.dtype = ir::DType::kU8;
  t.dims = {kRows, kCols};
  t.data = ir::TensorData::Owned(std::move(bytes));
  t.quant.kind = ir::QuantKind::kGgmlBlocks;
  t.quant.block_type = type;
  t.quant.axis = 1;
  t.quant.group_size = ir::GgmlTypeGeometry(type)->block_size;
  t.quant.algorithm = "imatrix";
  return t;
}

ir::Model BlockModel(const std::string& dir, const ir::Tensor& w) {
  return testing::GemmModel(dir, kBatch, kRows, kCols, {w});
}

std::vector<float> RunGemm(const ir::Model& m) {
  return testing::RunGemm(m, kBatch, kCols, Normal(kBatch * kCols, 5));
}

std::vector<float> Decoded(const ir::Tensor& w) {
  auto v = ir::DequantizeToF32(w, nullptr, nullptr);
  EXPECT_THAT(v, IsOk());
  return v.ok() ? *v : std::vector<float>{};
}

class GgmlBlocksArtifactTest : public ::testing::TestWithParam<ir::GgmlType> {};

TEST_P(GgmlBlocksArtifactTest, WrittenReadRunAndDecodedBitForBit) {
  const ir::GgmlType type = GetParam();
  const std::string name(ir::GgmlTypeName(type));
  const ir::GgmlGeometry geo = *ir::GgmlTypeGeometry(type);
  TempDir dir;
  const ir::Tensor w = BlockWeight(type);
  const ir::Model src = BlockModel(dir.path(), w);
  ASSERT_THAT(ir::VerifyModel(src), IsOk());
  const std::string out = dir.File("out");
  ASSERT_THAT(shard_writer::WriteArtifact(src, out, {}), IsOk());

  // The manifest: the layout object, the record, the feature, nbytes.
  const nlohmann::json m = nlohmann::json::parse(ReadFile(out + "/manifest.json"));
  EXPECT_EQ(m["required_features"], nlohmann::json::parse(R"(["ggml_blocks"])"));
  ASSERT_EQ(m["tensors"].size(), 1u);
  const nlohmann::json& t = m["tensors"][0];
  EXPECT_EQ(t["layout"], nlohmann::json({{"axis", 1}, {"block_type", name},
                                         {"kind", "ggml_blocks"}}));
  EXPECT_EQ(t["quant"], nlohmann::json({{"algorithm", "imatrix"},
                                        {"bits", geo.bits},
                                        {"group_size", geo.block_size},
                                        {"symmetric", !geo.has_min}}));
  EXPECT_EQ(t["dtype"], "u8");
  EXPECT_EQ(t["nbytes"].get<uint64_t>(), kRows * kCols / geo.block_size * geo.block_bytes);

  // Read back: the same layout and bytes.
  auto back = ReadArtifactModel(out);
  ASSERT_THAT(back, IsOk());
  const ir::Tensor* b = back->graph.FindInitializer("w");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->quant == w.quant);
  EXPECT_EQ(b->dims, w.dims);
  ASSERT_EQ(b->data.size(), w.data.size());
  EXPECT_EQ(0, std::memcmp(b->data.data(), w.data.data(), w.data.size()));

  // One decoded truth: the IR's decoder is ggml's DequantizeRow.
  const std::vector<float> want = Decoded(w);
  std::vector<float> ggml(want.size());
  const uint64_t row_bytes = *ir::GgmlRowBytes(type, kCols);
  for (int64_t r = 0; r < kRows; ++r) {
    ASSERT_THAT(gguf::DequantizeRow(static_cast<gguf::TensorType>(type),
                                    w.data.data() + r * row_bytes, kCols,
                                    ggml.data() + r * kCols),
                IsOk());
  }
  EXPECT_EQ(0, std::memcmp(ggml.data(), want.data(), want.size() * 4));

  // The interpreter runs the weight as its decoded values.
  ir::Model plain = src;
  plain.graph = BlockModel(dir.path(), testing::F32Tensor("w", {kRows, kCols}, want)).graph;
  const std::vector<float> y = RunGemm(plain);
  ASSERT_EQ(y.size(), static_cast<size_t>(kBatch * kRows));
  EXPECT_EQ(RunGemm(src), y);
  EXPECT_EQ(RunGemm(*back), y);

  // The standalone loader, C++ (both kernel choices) and C API.
  auto a = loader::Artifact::Open(out);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  for (auto impl : {loader::DequantImpl::kBest, loader::DequantImpl::kScalar}) {
    std::vector<float> got(want.size());
    ASSERT_TRUE((*a)->DequantizeToF32("w", got.data(), got.size(), impl).ok());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * 4));
  }
  slimpack_artifact* c = nullptr;
  ASSERT_EQ(slimpack_artifact_open(out.c_str(), nullptr, &c), SLIMPACK_OK);
  slimpack_tensor_info info;
  ASSERT_EQ(slimpack_artifact_tensor_info(c, 0, &info), SLIMPACK_OK);
  EXPECT_EQ(info.layout, SLIMPACK_LAYOUT_GGML_BLOCKS);
  EXPECT_EQ(info.dtype, SLIMPACK_DTYPE_U8);
  EXPECT_EQ(info.group_size, geo.block_size);
  EXPECT_EQ(info.scale_index, -1);
  ASSERT_NE(slimpack_artifact_tensor_block_type(c, 0), nullptr);
  EXPECT_EQ(std::string(slimpack_artifact_tensor_block_type(c, 0)), name);
  EXPECT_EQ(slimpack_artifact_tensor_block_type(c, 1), nullptr);  // out of range
  std::vector<float> got(want.size());
  ASSERT_EQ(slimpack_artifact_dequantize_f32(c, 0, got.data(), got.size()), SLIMPACK_OK);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * 4));
  slimpack_artifact_close(c);
}

// Arbitrary bytes (negative and subnormal f16 scales, every code) decode
// the same in the loader's independent decoder and the IR's.
TEST_P(GgmlBlocksArtifactTest, RandomBytesDecodeTheSameInLoaderAndIr) {
  const ir::GgmlType type = GetParam();
  const ir::GgmlGeometry geo = *ir::GgmlTypeGeometry(type);
  std::mt19937 rng(static_cast<uint32_t>(type));
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t rows = 1 + trial % 3, cols = geo.block_size * (1 + trial % 4);
    std::vector<uint8_t> bytes(*ir::GgmlRowBytes(type, cols) * rows);
    for (uint8_t& v : bytes) v = static_cast<uint8_t>(rng());
    ir::Tensor q;
    q.name = "r";
    q.dtype = ir::DType::kU8;
    q.dims = {rows, cols};
    q.quant.kind = ir::QuantKind::kGgmlBlocks;
    q.quant.block_type = type;
    q.quant.axis = 1;
    q.quant.group_size = geo.block_size;
    q.data = ir::TensorData::Owned(bytes);
    const std::vector<float> want = Decoded(q);
    loader::QuantizedTensorRef ref;
    ref.layout = shard::LayoutKind::kGgmlBlocks;
    ref.dtype = shard::DType::kU8;
    ref.shape = {static_cast<uint64_t>(rows), static_cast<uint64_t>(cols)};
    ref.axis = 1;
    ref.block_type = static_cast<uint32_t>(type);
    ref.data = bytes.data();
    ref.data_bytes = bytes.size();
    std::vector<float> got(want.size());
    ASSERT_TRUE(loader::DequantizeToF32(ref, got.data(), got.size()).ok());
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * 4)) << "trial " << trial;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryType, GgmlBlocksArtifactTest,
    ::testing::Values(ir::GgmlType::kQ4_0, ir::GgmlType::kQ4_1, ir::GgmlType::kQ5_0,
                      ir::GgmlType::kQ5_1, ir::GgmlType::kQ8_0, ir::GgmlType::kQ2_K,
                      ir::GgmlType::kQ3_K, ir::GgmlType::kQ4_K, ir::GgmlType::kQ5_K,
                      ir::GgmlType::kQ6_K),
    [](const auto& info) { return std::string(ir::GgmlTypeName(info.param)); });

// The loader's block geometry (format.h, the contract) and the IR's agree.
TEST(GgmlBlocksLayoutTest, LoaderAndIrAgreeOnGeometry) {
  int seen = 0;
  for (const shard::GgmlBlockType& s : shard::kGgmlBlockTypes) {
    const auto type = static_cast<ir::GgmlType>(s.ggml_type);
    const auto geo = ir::GgmlTypeGeometry(type);
    ASSERT_TRUE(geo.has_value()) << s.name;
    EXPECT_EQ(ir::GgmlTypeName(type), s.name);
    EXPECT_EQ(geo->block_size, s.block_size) << s.name;
    EXPECT_EQ(geo->block_bytes, s.block_bytes) << s.name;
    EXPECT_EQ(geo->has_min, s.has_min) << s.name;
    ++seen;
  }
  EXPECT_EQ(seen, 10);
  EXPECT_EQ(ir::GgmlTypeFromName("q4_K"), ir::GgmlType::kQ4_K);  // ggml's spelling
  EXPECT_FALSE(ir::GgmlTypeFromName("q4_k_m").has_value());
}

// Manifest edits the loader must refuse at open, naming the tensor.
struct BadCase {
  const char* name;
  void (*edit)(nlohmann::json& m);
  const char* message;
};

nlohmann::json& W(nlohmann::json& m) { return m["tensors"][0]; }

const BadCase kBadCases[] = {
    {"WithoutFeature", [](nlohmann::json& m) { m["required_features"] = nlohmann::json::array(); },
     "layout ggml_blocks is used but required_features does not list \"ggml_blocks\""},
    {"UnknownBlockType", [](nlohmann::json& m) { W(m)["layout"]["block_type"] = "iq4_nl"; },
     "unknown block type \"iq4_nl\""},
    {"AxisNotLast", [](nlohmann::json& m) { W(m)["layout"]["axis"] = 0; },
     "ggml blocks run along the last axis (1), found 0"},
    {"NbytesOfAnotherType", [](nlohmann::json& m) { W(m)["layout"]["block_type"] = "q8_0"; },
     "nbytes 1152 does not match 2048 weights of q8_0 (expected 2176)"},
    {"RowNotWholeBlocks", [](nlohmann::json& m) { W(m)["shape"] = nlohmann::json::array({16, 96}); },
     "last dim 96 is not a multiple of q4_k's block size 256"},
    {"WrongDtype", [](nlohmann::json& m) { W(m)["dtype"] = "i8"; },
     "layout ggml_blocks needs dtype u8, found i8"},
    {"NamesAScale", [](nlohmann::json& m) { W(m)["layout"]["scale"] = "w"; },
     "layout ggml_blocks has no scale"},
    {"SparsityRecord",
     [](nlohmann::json& m) {
       W(m)["sparsity"] = {{"axis", 1},         {"criterion", "magnitude"},
                           {"pattern", "unstructured"}, {"ratio", 0.0},
                           {"storage", "dense"}, {"zeros", 0}};
     },
     "a sparsity record on a ggml_blocks tensor is not allowed"},
};

class BadGgmlManifestTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadGgmlManifestTest, RefusedAtOpenNamingTheTensor) {
  TempDir dir;
  const std::string out = dir.File("out");
  ASSERT_THAT(shard_writer::WriteArtifact(BlockModel(dir.path(), BlockWeight(ir::GgmlType::kQ4_K)),
                                          out, {}),
              IsOk());
  nlohmann::json m = nlohmann::json::parse(ReadFile(out + "/manifest.json"));
  GetParam().edit(m);
  RewriteManifest(out, m);
  auto a = loader::Artifact::Open(out);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr(GetParam().message));
  EXPECT_THAT(a.status().message(), HasSubstr("'w'"));
}

INSTANTIATE_TEST_SUITE_P(Cases, BadGgmlManifestTest, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GgmlBlocksLayoutTest, IrRefusesInconsistentLayoutsNamingTheTensor) {
  const ir::Tensor good = BlockWeight(ir::GgmlType::kQ6_K);
  EXPECT_THAT(ir::ValidateQuantLayout(good, nullptr, nullptr), IsOk());
  auto expect = [&](void (*edit)(ir::Tensor&), const char* what) {
    ir::Tensor t = good;
    edit(t);
    EXPECT_THAT(ir::ValidateQuantLayout(t, nullptr, nullptr),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what)));
    EXPECT_THAT(ir::ValidateQuantLayout(t, nullptr, nullptr),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tensor 'w'")));
  };
  expect([](ir::Tensor& t) { t.dtype = ir::DType::kI8; }, "needs dtype u8");
  expect([](ir::Tensor& t) { t.quant.axis = 0; }, "must be the last axis (1)");
  expect([](ir::Tensor& t) { t.quant.group_size = 32; }, "must be q6_k's block size 256");
  expect([](ir::Tensor& t) { t.dims = {8, 128}; }, "last dim 128 of [8,128] is not a multiple");
  expect([](ir::Tensor& t) { t.quant.scale = "w.scale"; }, "carry their own");
  expect([](ir::Tensor& t) { t.quant.block_type = static_cast<ir::GgmlType>(1); },
         "is not a ggml block type");
  // Byte counts follow the blocks, not the element count.
  EXPECT_EQ(*good.ExpectedBytes(), static_cast<uint64_t>(kRows * kCols / 256 * 210));
  ir::Tensor short_bytes = good;
  short_bytes.data = ir::TensorData::Owned(std::vector<uint8_t>(100));
  EXPECT_THAT(ir::DequantizeToF32(short_bytes, nullptr, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs 1680 bytes, found 100")));
}

// A GGUF as llama-quantize writes it (here: our q4_k_m export of the
// bundled tiny-llama, whose 128-wide rows take llama-quantize's fallbacks
// q5_0 / q5_1 / q8_0 / f16) is imported with its blocks as they are,
// converted into an artifact, and exported back to GGUF: every tensor
// comes out with the same type and the same bytes (q/k rows are put in HF
// order on import and back in llama.cpp's rope order on export).
void ExpectSameGgufTensors(const std::string& first, const std::string& second) {
  auto a = gguf::OpenGgufFile(first);
  auto b = gguf::OpenGgufFile(second);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  for (const gguf::TensorInfo& ta : a->tensors) {
    const gguf::TensorInfo* tb = b->FindTensor(ta.name);
    ASSERT_NE(tb, nullptr) << ta.name;
    EXPECT_EQ(tb->type, ta.type) << ta.name;
    ASSERT_EQ(tb->n_bytes, ta.n_bytes) << ta.name;
    EXPECT_EQ(0, std::memcmp(tb->data, ta.data, ta.n_bytes)) << ta.name;
  }
}

TEST(GgmlBlocksGgufTest, GgufCarriedIntoAnArtifactAndBackByteForByte) {
  TempDir dir;
  auto hf = safetensors::ImportSafetensors(SLIMPACK_TINY_LLAMA_DIR);
  ASSERT_THAT(hf, IsOk());
  gguf_export::GgufExportOptions options;
  options.preset = "q4_k_m";
  const std::string first = dir.File("first.gguf");
  ASSERT_THAT(gguf_export::ExportDecoderToGguf(*hf, options, first), IsOk());

  auto imported = gguf::ImportGguf(first);
  ASSERT_THAT(imported, IsOk());
  int blocks = 0;
  for (const ir::Tensor& t : imported->graph.initializers()) {
    if (!t.quant.quantized()) continue;
    ++blocks;
    EXPECT_EQ(t.quant.kind, ir::QuantKind::kGgmlBlocks) << t.name;
    EXPECT_EQ(t.quant.algorithm, "gguf") << t.name;
    EXPECT_THAT(ir::ValidateQuantLayout(t, nullptr, nullptr), IsOk());
  }
  EXPECT_GT(blocks, 20);

  const std::string art = dir.File("art");
  ASSERT_THAT(shard_writer::WriteArtifact(*imported, art, {}), IsOk());
  auto back = ReadArtifactModel(art);
  ASSERT_THAT(back, IsOk());
  back->carried_files.push_back(std::string(SLIMPACK_TINY_LLAMA_DIR) + "/tokenizer.json");
  const std::string second = dir.File("second.gguf");
  auto result = gguf_export::ExportDecoderToGguf(*back, options, second);
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->carried, blocks);

  ExpectSameGgufTensors(first, second);

  // The checkpoint encoded straight into an artifact (`convert -o DIR
  // --quant q4_k_m`) holds the same blocks, in HF order, and exports to
  // the same tensors.
  auto encoded = gguf_export::EncodeDecoderAsGgmlBlocks(*hf, options);
  ASSERT_THAT(encoded, IsOk());
  EXPECT_EQ(encoded->stats.tensors, 39);
  EXPECT_EQ(encoded->stats.fallbacks, 29);  // 128-wide rows take no K type
  const std::string art2 = dir.File("art2");
  ASSERT_THAT(shard_writer::WriteArtifact(encoded->model, art2, {}), IsOk());
  // Encoded only when the writer asks (what `convert` does): the same files.
  auto deferred = gguf_export::EncodeDecoderAsGgmlBlocks(*hf, options, /*deferred=*/true);
  ASSERT_THAT(deferred, IsOk());
  ASSERT_TRUE(deferred->produce);
  shard_writer::ArtifactOptions write;
  write.encoder.produce = deferred->produce;
  write.threads = 2;
  const std::string art3 = dir.File("art3");
  ASSERT_THAT(shard_writer::WriteArtifact(deferred->model, art3, write), IsOk());
  EXPECT_EQ(shard_writer::testing::HashFiles(art3), shard_writer::testing::HashFiles(art2));
  auto back2 = ReadArtifactModel(art2);
  ASSERT_THAT(back2, IsOk());
  for (const ir::Tensor& t : back2->graph.initializers()) {
    const ir::Tensor* from_gguf = imported->graph.FindInitializer(t.name);
    ASSERT_NE(from_gguf, nullptr) << t.name;
    EXPECT_EQ(t.quant.block_type, from_gguf->quant.block_type) << t.name;
    if (t.quant.quantized()) {
      ASSERT_EQ(t.data.size(), from_gguf->data.size()) << t.name;
      EXPECT_EQ(0, std::memcmp(t.data.data(), from_gguf->data.data(), t.data.size())) << t.name;
    }
  }
  back2->carried_files.push_back(std::string(SLIMPACK_TINY_LLAMA_DIR) + "/tokenizer.json");
  const std::string third = dir.File("third.gguf");
  ASSERT_THAT(gguf_export::ExportDecoderToGguf(*back2, options, third), IsOk());
  ExpectSameGgufTensors(first, third);
}

}  // namespace
}  // namespace slimpack::shard_reader
