// End-to-end writer tests: convert safetensors and ONNX fixtures, read the
// artifact back with the standalone loader and compare with the source.
#include "formats/shard/writer/artifact_writer.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "ir/float_convert.h"
#include "formats/safetensors/safetensors_writer.h"
#include "formats/shard/format.h"
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
using ::slimpack::shard_writer::testing::F32Tensor;
using ::slimpack::shard_writer::testing::HashFiles;
using ::slimpack::shard_writer::testing::ListDir;
using ::slimpack::shard_writer::testing::OpenAndVerify;
using ::slimpack::shard_writer::testing::OpenArtifact;
using ::slimpack::shard_writer::testing::ReadFile;
using ::slimpack::shard_writer::testing::TempDir;
using ::slimpack::shard_writer::testing::TinyLlama;
using ::slimpack::shard_writer::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1 << 20;

std::vector<uint8_t> TensorBytes(loader::Artifact& a, const std::string& name) {
  auto v = a.GetTensor(name);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  if (!v.ok()) return {};
  return std::vector<uint8_t>(v->data(), v->data() + v->size());
}

std::vector<float> AsFloats(const ir::Tensor& t) {
  std::vector<float> out(t.data.size() / 4);
  std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

double HalfUlp(double x, int mantissa_bits, int min_exp) {
  int e;
  std::frexp(x, &e);
  return std::ldexp(0.5, std::max(e - 1, min_exp) - mantissa_bits);
}

// Every stored element is the source value within half an ulp of `dtype`,
// NaN stays NaN, infinities and overflow become infinities of the sign.
void ExpectWithinHalfUlp(const std::vector<float>& src,
                         const std::vector<uint8_t>& stored, ir::DType dtype,
                         const std::string& name) {
  ASSERT_EQ(stored.size(), src.size() * 2) << name;
  const bool f16 = dtype == ir::DType::kF16;
  for (size_t i = 0; i < src.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, &stored[2 * i], 2);
    const double got = f16 ? ir::F16ToF32(bits) : ir::Bf16ToF32(bits);
    const double want = src[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << name << "[" << i << "]";
    } else if (std::isinf(got)) {
      EXPECT_TRUE(std::isinf(want) || std::fabs(want) >= (f16 ? 65520.0 : 3.389e38))
          << name << "[" << i << "] = " << want;
      EXPECT_EQ(std::signbit(got), std::signbit(want));
    } else {
      EXPECT_LE(std::fabs(got - want), f16 ? HalfUlp(want, 10, -14) : HalfUlp(want, 7, -126))
          << name << "[" << i << "] = " << want << " stored as " << got;
    }
  }
}

class SafetensorsConvertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteTinyLlamaCheckpoint(in_.path(), spec_);
  }
  TinyLlama spec_;
  TempDir in_;
  TempDir out_;
};

TEST_F(SafetensorsConvertTest, F32IsExactAndMetadataIsComplete) {
  const std::string out = out_.File("art");
  auto summary = Convert(in_.path(), out);
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->tensors, spec_.Tensors().size());
  EXPECT_FALSE(summary->replaced);
  ASSERT_THAT(OpenAndVerify(out), IsOk());
  auto a = OpenArtifact(out);
  ASSERT_THAT(a, IsOk());
  const loader::Manifest& m = (*a)->manifest();
  ASSERT_EQ(m.tensors.size(), spec_.Tensors().size());
  for (const ir::Tensor& t : spec_.Tensors()) {
    const loader::TensorInfo* info = (*a)->FindTensor(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    EXPECT_EQ(info->dtype, shard::DType::kF32);
    std::vector<uint64_t> dims(t.dims.begin(), t.dims.end());
    EXPECT_EQ(info->shape, dims) << t.name;
    EXPECT_EQ(info->layout.kind, shard::LayoutKind::kPlain);
    auto bytes = TensorBytes(**a, t.name);
    ASSERT_EQ(bytes.size(), t.data.size());
    EXPECT_EQ(0, std::memcmp(bytes.data(), t.data.data(), bytes.size())) << t.name;
    EXPECT_THAT(info->source, AllOf(HasSubstr("model.safetensors@"),
                                    ::testing::Not(HasSubstr("/"))));
  }
  const loader::TensorInfo* up = (*a)->FindTensor("model.layers.1.mlp.up_proj.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->layer, 1);
  EXPECT_EQ(up->role, "up_proj");
  EXPECT_EQ((*a)->FindTensor("lm_head.weight")->layer, -1);

  // Model, producer and carried files.
  EXPECT_EQ(m.source_format, "safetensors");
  ASSERT_TRUE(m.architecture.has_value());
  EXPECT_EQ(m.architecture->model_type, "llama");
  EXPECT_EQ(m.architecture->num_layers, spec_.layers);
  EXPECT_EQ(m.architecture->config_file, "config.json");
  EXPECT_EQ(m.producer_name, "slimpack");
  auto recipe = nlohmann::json::parse(m.recipe_json);
  EXPECT_EQ(recipe["shard_size"], kDefaultShardSize);
  EXPECT_FALSE(recipe.contains("dtype"));
  auto input_hashes = HashFiles(in_.path());
  std::map<std::string, std::string> inputs;
  for (const auto& f : m.inputs) inputs[f.file] = f.sha256;
  EXPECT_EQ(inputs["model.safetensors"], input_hashes["model.safetensors"]);
  EXPECT_EQ(inputs["config.json"], input_hashes["config.json"]);
  std::vector<std::string> carried;
  for (const auto& f : m.carried_files) carried.push_back(f.file);
  EXPECT_THAT(carried, ElementsAre("config.json", "tokenizer.json"));
  EXPECT_EQ(ReadFile(out + "/tokenizer.json"), ReadFile(in_.File("tokenizer.json")));
  EXPECT_THAT(ListDir(out), ElementsAre("config.json", "manifest.json",
                                        "shard-00000.bin", "tokenizer.json"));
  // Nothing but the artifact is left beside it (no staging).
  EXPECT_THAT(ListDir(out_.path()), ElementsAre("art"));
}

TEST_F(SafetensorsConvertTest, EveryTensorIs64ByteAlignedInFileAndMemory) {
  const std::string out = out_.File("art");
  ASSERT_THAT(Convert(in_.path(), out, Args(ir::DType::kF16, kMiB)),
              IsOk());
  auto a = OpenArtifact(out);
  ASSERT_THAT(a, IsOk());
  for (size_t i = 0; i < (*a)->num_tensors(); ++i) {
    const loader::TensorInfo& t = (*a)->tensor(i);
    EXPECT_EQ(t.offset % shard::kTensorAlignment, 0u) << t.name;
    EXPECT_GE(t.offset, shard::kDataRegionOffset) << t.name;
    auto v = (*a)->GetTensor(i);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v->data()) % 64, 0u) << t.name;
  }
}

class DTypeConvertTest : public SafetensorsConvertTest,
                         public ::testing::WithParamInterface<ir::DType> {};

TEST_P(DTypeConvertTest, ValuesWithinHalfAnUlp) {
  const std::string out = out_.File("art");
  ASSERT_THAT(Convert(in_.path(), out, Args(GetParam())), IsOk());
  ASSERT_THAT(OpenAndVerify(out), IsOk());
  auto a = OpenArtifact(out);
  ASSERT_THAT(a, IsOk());
  auto recipe = nlohmann::json::parse((*a)->manifest().recipe_json);
  EXPECT_EQ(recipe["dtype"], std::string(ir::DTypeName(GetParam())));
  for (const ir::Tensor& t : spec_.Tensors()) {
    const loader::TensorInfo* info = (*a)->FindTensor(t.name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(shard::DTypeName(info->dtype), ir::DTypeName(GetParam()));
    EXPECT_EQ(info->nbytes, t.data.size() / 2);
    ExpectWithinHalfUlp(AsFloats(t), TensorBytes(**a, t.name), GetParam(), t.name);
  }
}

INSTANTIATE_TEST_SUITE_P(HalfTypes, DTypeConvertTest,
                         ::testing::Values(ir::DType::kF16, ir::DType::kBF16),
                         [](const auto& info) {
                           return std::string(ir::DTypeName(info.param));
                         });

TEST(ConvertMixedDTypesTest, OnlyFloatWeightsAreCast) {
  TempDir in, out;
  std::vector<ir::Tensor> tensors;
  auto raw = [](const std::string& name, ir::DType dt, std::vector<int64_t> dims,
                std::vector<uint8_t> bytes) {
    ir::Tensor t;
    t.name = name;
    t.dtype = dt;
    t.dims = std::move(dims);
    t.data = ir::TensorData::Owned(std::move(bytes));
    return t;
  };
  tensors.push_back(raw("ids", ir::DType::kI64, {2}, std::vector<uint8_t>(16, 7)));
  tensors.push_back(raw("mask", ir::DType::kBool, {3}, {1, 0, 1}));
  tensors.push_back(raw("bytes", ir::DType::kU8, {5}, {1, 2, 3, 4, 5}));
  tensors.push_back(raw("wide", ir::DType::kF64, {1}, std::vector<uint8_t>(8, 0x3f)));
  tensors.push_back(raw("half", ir::DType::kF16, {2}, {0x00, 0x3C, 0x00, 0xC0}));  // 1, -2
  tensors.push_back(F32Tensor("weight", {4, 4}, 5));
  ASSERT_THAT(safetensors::WriteSafetensorsFile(in.File("m.safetensors"), tensors),
              IsOk());
  const std::string dst = out.File("art");
  ASSERT_THAT(Convert(in.File("m.safetensors"), dst, Args(ir::DType::kBF16)),
              IsOk());
  auto a = OpenArtifact(dst);
  ASSERT_THAT(a, IsOk());
  for (const ir::Tensor& t : tensors) {
    const loader::TensorInfo* info = (*a)->FindTensor(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    if (t.dtype == ir::DType::kF16 || t.dtype == ir::DType::kF32) {
      EXPECT_EQ(info->dtype, shard::DType::kBF16) << t.name;
    } else {
      EXPECT_EQ(shard::DTypeName(info->dtype), ir::DTypeName(t.dtype)) << t.name;
      auto bytes = TensorBytes(**a, t.name);
      EXPECT_EQ(bytes, std::vector<uint8_t>(t.data.data(), t.data.data() + t.data.size()));
    }
  }
  // f16 1.0 and -2.0 are exact in bf16.
  EXPECT_THAT(TensorBytes(**a, "half"), ElementsAre(0x80, 0x3F, 0x00, 0xC0));
  // No config.json: no architecture, no carried files, no layers.
  EXPECT_FALSE((*a)->manifest().architecture.has_value());
  EXPECT_TRUE((*a)->manifest().carried_files.empty());
}

TEST(ConvertShardingTest, LayersStayTogetherUnderASmallCap) {
  TempDir in, out;
  TinyLlama spec;
  spec.layers = 6;
  spec.hidden = 128;
  spec.intermediate = 256;  // about 450 KiB of f32 per layer
  spec.vocab = 512;
  testing::WriteTinyLlamaCheckpoint(in.path(), spec);
  const std::string dst = out.File("art");
  ASSERT_THAT(Convert(in.path(), dst, Args(std::nullopt, kMiB)), IsOk());
  ASSERT_THAT(OpenAndVerify(dst), IsOk());
  auto a = OpenArtifact(dst);
  ASSERT_THAT(a, IsOk());
  const loader::Manifest& m = (*a)->manifest();
  EXPECT_GE(m.shards.size(), 4u);
  for (const auto& s : m.shards) EXPECT_LE(s.size, kMiB) << s.file;
  std::map<int64_t, std::set<uint32_t>> shards_of_layer;
  for (const auto& t : m.tensors) {
    if (t.layer >= 0) shards_of_layer[t.layer].insert(t.shard);
  }
  ASSERT_EQ(shards_of_layer.size(), 6u);
  for (const auto& [layer, shards] : shards_of_layer) {
    EXPECT_EQ(shards.size(), 1u) << "layer " << layer << " is split";
  }
  // Layers are laid out in ascending order.
  uint32_t prev = 0;
  for (const auto& [layer, shards] : shards_of_layer) {
    EXPECT_GE(*shards.begin(), prev);
    prev = *shards.begin();
  }
}

TEST(ConvertShardingTest, TensorLargerThanCapGetsItsOwnShard) {
  TempDir in, out;
  std::vector<ir::Tensor> tensors = {
      F32Tensor("a.small", {16}, 1),
      F32Tensor("b.big", {512, 768}, 2),  // 1.5 MiB
      F32Tensor("c.small", {16}, 3),
  };
  ASSERT_THAT(safetensors::WriteSafetensorsFile(in.File("m.safetensors"), tensors),
              IsOk());
  const std::string dst = out.File("art");
  ASSERT_THAT(Convert(in.File("m.safetensors"), dst, Args(std::nullopt, kMiB)), IsOk());
  ASSERT_THAT(OpenAndVerify(dst), IsOk());
  auto a = OpenArtifact(dst);
  ASSERT_THAT(a, IsOk());
  const loader::TensorInfo* big = (*a)->FindTensor("b.big");
  ASSERT_NE(big, nullptr);
  size_t in_shard = 0;
  for (const auto& t : (*a)->manifest().tensors) in_shard += t.shard == big->shard;
  EXPECT_EQ(in_shard, 1u);
  EXPECT_EQ(big->offset, shard::kDataRegionOffset);
  EXPECT_GT((*a)->manifest().shards[big->shard].size, kMiB);
  EXPECT_EQ((*a)->manifest().shards.size(), 3u);
}

// A quantized weight one shard over the 1 MiB cap from its scale: the part
// writing only the scale still has to quantize the weight, so
// TensorsOfPart names it there too (an AWQ part searches by these names).
TEST(TensorsOfPartTest, ThePartWritingAScaleComputesItsWeight) {
  ir::Model model;
  ir::Tensor w;
  w.name = "a.weight";
  w.dtype = ir::DType::kI8;
  w.dims = {1000, 1000};
  w.data = ir::TensorData::Owned(std::vector<uint8_t>(1000 * 1000, 1));
  w.quant.kind = ir::QuantKind::kInt8GroupWise;
  w.quant.axis = 1;
  w.quant.group_size = 2;
  w.quant.scale = "a.weight.scale";
  ir::Tensor scale;
  scale.name = "a.weight.scale";
  scale.dtype = ir::DType::kF16;
  scale.dims = {1000, 500};
  scale.data = ir::TensorData::Owned(std::vector<uint8_t>(1000 * 500 * 2, 0));
  ASSERT_THAT(model.graph.AddInitializer(w), IsOk());
  ASSERT_THAT(model.graph.AddInitializer(scale), IsOk());
  shard_writer::ArtifactOptions o;
  o.shard_size = 1 << 20;  // 1e6 + 1e6 bytes: one shard each, one part each
  o.part = shard_writer::PartSpec{0, 2};
  auto first = shard_writer::TensorsOfPart(model, o);
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(*first, (std::set<std::string>{"a.weight"}));
  o.part = shard_writer::PartSpec{1, 2};
  auto second = shard_writer::TensorsOfPart(model, o);
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(*second, (std::set<std::string>{"a.weight", "a.weight.scale"}));
  o.part = shard_writer::PartSpec{2, 2};
  EXPECT_THAT(shard_writer::TensorsOfPart(model, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("part 3/2 does not exist")));
}

TEST(ConvertDeterminismTest, SameBytesAtOneAndFourThreads) {
  TempDir in, out;
  TinyLlama spec;
  spec.layers = 4;
  spec.hidden = 128;
  spec.intermediate = 256;
  testing::WriteTinyLlamaCheckpoint(in.path(), spec);
  ASSERT_THAT(Convert(in.path(), out.File("t1"),
                      Args(ir::DType::kF16, kMiB, 1)),
              IsOk());
  ASSERT_THAT(Convert(in.path(), out.File("t4"),
                      Args(ir::DType::kF16, kMiB, 4)),
              IsOk());
  const auto h1 = HashFiles(out.File("t1"));
  const auto h4 = HashFiles(out.File("t4"));
  EXPECT_GE(h1.size(), 5u);  // several shards, manifest, carried files
  EXPECT_EQ(h1, h4);
  // No absolute path leaks into the manifest.
  const std::string manifest = ReadFile(out.File("t1") + "/manifest.json");
  EXPECT_THAT(manifest, ::testing::Not(HasSubstr(in.path())));
  EXPECT_THAT(manifest, ::testing::Not(HasSubstr(out.path())));
}

TEST(ConvertManifestTest, ManifestIsCanonicalJson) {
  TempDir in, out;
  testing::WriteTinyLlamaCheckpoint(in.path());
  ASSERT_THAT(Convert(in.path(), out.File("art")), IsOk());
  const std::string text = ReadFile(out.File("art") + "/manifest.json");
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j.dump(1, ' ', false, nlohmann::json::error_handler_t::strict) + "\n",
            text);
  EXPECT_EQ(j["complete"], true);
  EXPECT_EQ(j["format"], "slimpack-shard");
  EXPECT_EQ(j["required_features"], nlohmann::json::array());
  // Storage order: (shard, offset, nbytes, name).
  const auto& tensors = j["tensors"];
  for (size_t i = 1; i < tensors.size(); ++i) {
    auto key = [](const nlohmann::json& t) {
      return std::make_tuple(t["shard"].get<uint64_t>(), t["offset"].get<uint64_t>(),
                             t["nbytes"].get<uint64_t>(), t["name"].get<std::string>());
    };
    EXPECT_LT(key(tensors[i - 1]), key(tensors[i]));
  }
}

TEST(ConvertOnnxTest, GraphAndWeightsRoundTrip) {
  TempDir in, out;
  testing::WriteOnnxFixture(in.File("model.onnx"));
  auto model = formats::ImportModel(in.File("model.onnx"));
  ASSERT_THAT(model, IsOk());
  const std::string dst = out.File("art");
  ASSERT_THAT(Convert(in.File("model.onnx"), dst, Args(ir::DType::kF16)), IsOk());
  ASSERT_THAT(OpenAndVerify(dst), IsOk());
  auto a = OpenArtifact(dst);
  ASSERT_THAT(a, IsOk());
  const loader::Manifest& m = (*a)->manifest();
  ASSERT_EQ(m.source_format, "onnx");
  ASSERT_TRUE(m.onnx.has_value());
  EXPECT_EQ(m.onnx->ir_version, 8);
  EXPECT_EQ(m.onnx->opset_imports.at(""), 13);
  EXPECT_EQ(m.onnx->producer_name, "writer_test");
  EXPECT_EQ(m.onnx->metadata_props.at("purpose"), "round trip");
  std::vector<std::string> nodes;
  for (const auto& n : m.onnx->graph.nodes) nodes.push_back(n.name);
  EXPECT_THAT(nodes, ElementsAre("conv1", "relu1", "fill", "add1", "branch"));
  std::vector<std::string> inits;
  for (int32_t i : m.onnx->graph.initializers) inits.push_back(m.tensors[i].name);
  EXPECT_THAT(inits, ElementsAre("cond", "conv1.bias", "conv1.weight", "shape"));

  // Weights cast to f16; the bool and i64 initializers and the attribute
  // tensor (it sets ConstantOfShape's output type) keep their dtype.
  for (const ir::Tensor& t : model->graph.initializers()) {
    const loader::TensorInfo* info = (*a)->FindTensor(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    if (t.dtype == ir::DType::kF32) {
      EXPECT_EQ(info->dtype, shard::DType::kF16);
      ExpectWithinHalfUlp(AsFloats(t), TensorBytes(**a, t.name), ir::DType::kF16, t.name);
    } else {
      EXPECT_EQ(TensorBytes(**a, t.name),
                std::vector<uint8_t>(t.data.data(), t.data.data() + t.data.size()));
    }
  }
  const loader::TensorInfo* fill = (*a)->FindTensor("fill/value");
  ASSERT_NE(fill, nullptr);
  EXPECT_EQ(fill->dtype, shard::DType::kF32);
  EXPECT_THAT(TensorBytes(**a, "fill/value"), ElementsAre(0, 0, 0, 0x3F));  // 0.5f
  const loader::Node& branch = m.onnx->graph.nodes[4];
  ASSERT_EQ(branch.attributes.count("then_branch"), 1u);
  const loader::Graph& then_g = *branch.attributes.at("then_branch").graphs.at(0);
  ASSERT_EQ(then_g.initializers.size(), 1u);
  EXPECT_EQ(m.tensors[then_g.initializers[0]].name, "then_bias");
  EXPECT_EQ(m.tensors[then_g.initializers[0]].dtype, shard::DType::kF16);
  // The input file is digested under its base name.
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].file, "model.onnx");
  EXPECT_EQ(m.inputs[0].sha256, HashFiles(in.path())["model.onnx"]);
}

}  // namespace
}  // namespace slimpack::shard_writer
