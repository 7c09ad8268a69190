// SerializeManifest: canonical bytes, the self-hash the loader checks, and
// the errors for names the format forbids.
#include "formats/shard/writer/manifest_json.h"

#include <cmath>

#include "formats/shard/loader/manifest.h"
#include "formats/shard/writer/model_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"

namespace slimpack::shard_writer {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kHash[] =
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

ManifestParts OneTensor() {
  ManifestParts p;
  p.model = {{"source_format", "safetensors"}};
  p.recipe = {{"passes", nlohmann::json::array()}};
  p.producer_version = "0.1.0";
  p.inputs = {{"model.safetensors", 100, kHash}};
  p.shards = {{"shard-00000.bin", 16448, kHash}};
  TensorEntry t;
  t.name = "w";
  t.dtype = ir::DType::kF32;
  t.dims = {4, 4};
  t.offset = 16384;
  t.nbytes = 64;
  t.layer = 2;
  t.role = ir::WeightRole::kUpProj;
  t.source = "model.safetensors@8";
  p.tensors = {t};
  return p;
}

TEST(ManifestJsonTest, SelfHashMatchesTheLoadersDefinition) {
  auto text = SerializeManifest(OneTensor());
  ASSERT_THAT(text, IsOk());
  auto j = nlohmann::json::parse(*text);
  auto self = loader::ComputeManifestSelfHash(*text);
  ASSERT_TRUE(self.ok()) << self.status().ToString();
  EXPECT_EQ(j["manifest_sha256"], *self);
  // And the loader accepts the whole manifest.
  auto m = loader::ParseManifest(*text, "manifest.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->tensors[0].layer, 2);
  EXPECT_EQ(m->tensors[0].role, "up_proj");
  // Canonical: exactly nlohmann's one-space dump plus a newline.
  EXPECT_EQ(j.dump(1) + "\n", *text);
}

TEST(ManifestJsonTest, TensorsAreWrittenInStorageOrder) {
  ManifestParts p = OneTensor();
  p.shards.push_back({"shard-00001.bin", 16448, kHash});
  TensorEntry a = p.tensors[0], b = p.tensors[0], z = p.tensors[0];
  a.name = "a";  // shard 1
  a.shard = 1;
  z.name = "z";  // shard 0, same offset as a zero-size "b"
  b.name = "b";
  b.nbytes = 0;
  b.dims = {0};
  p.tensors = {a, z, b};
  auto text = SerializeManifest(p);
  ASSERT_THAT(text, IsOk());
  auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["tensors"][0]["name"], "b");
  EXPECT_EQ(j["tensors"][1]["name"], "z");
  EXPECT_EQ(j["tensors"][2]["name"], "a");
}

TEST(ManifestJsonTest, RejectsUnsafeOrClashingFileNames) {
  for (const char* bad : {"../x", "a/b", "manifest.json", "x.tmp", "..", ""}) {
    ManifestParts p = OneTensor();
    p.carried = {{bad, 1, kHash}};
    EXPECT_THAT(SerializeManifest(p),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("carried file")))
        << bad;
  }
  ManifestParts p = OneTensor();
  p.carried = {{"shard-00000.bin", 1, kHash}};
  EXPECT_THAT(SerializeManifest(p),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clashes")));
}

TEST(ManifestJsonTest, NonUtf8StringsAreNamedByJsonPath) {
  ManifestParts p = OneTensor();
  p.tensors[0].name = "bad\xff";
  EXPECT_THAT(SerializeManifest(p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.tensors[0].name"),
                             HasSubstr("not valid UTF-8"))));
}

TEST(ManifestJsonTest, RejectsNestingDeeperThanReadersAllow) {
  ManifestParts p = OneTensor();
  nlohmann::json deep = nlohmann::json::array();
  for (int i = 0; i < 70; ++i) deep = nlohmann::json::array({deep});
  p.model["deep"] = deep;
  EXPECT_THAT(SerializeManifest(p),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deeper than 64")));
}

TEST(ModelJsonTest, Utf8Validator) {
  EXPECT_EQ(FindInvalidUtf8("plain ascii"), -1);
  EXPECT_EQ(FindInvalidUtf8("\xc3\xa9t\xc3\xa9"), -1);      // été
  EXPECT_EQ(FindInvalidUtf8("\xf0\x9f\x98\x80"), -1);       // U+1F600
  EXPECT_EQ(FindInvalidUtf8("ab\xc0\xaf"), 2);              // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("\xed\xa0\x80"), 0);            // surrogate
  EXPECT_EQ(FindInvalidUtf8("\xf4\x90\x80\x80"), 0);        // > U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("x\xe2\x82"), 1);               // truncated
  EXPECT_EQ(HexBytes(std::string("\x00\xff", 2)), "00ff");
}

TEST(ModelJsonTest, NonUtf8StringAttributesGoToValueHex) {
  ir::Model m;
  m.source_format = ir::SourceFormat::kOnnx;
  ir::Node n;
  n.name = "n";
  n.op_type = "Custom";
  n.attributes["s"] = ir::Attribute::String("\xff\xfe");
  n.attributes["ok"] = ir::Attribute::String("fine");
  n.attributes["f"] = ir::Attribute::Float(INFINITY);
  n.attributes["fs"] = ir::Attribute::Floats({1.5f, NAN});
  m.graph.nodes.push_back(n);
  auto j = ModelJson(m);
  ASSERT_THAT(j, IsOk());
  const auto& attrs = (*j)["onnx"]["graph"]["nodes"][0]["attributes"];
  EXPECT_EQ(attrs["s"]["value_hex"], "fffe");
  EXPECT_FALSE(attrs["s"].contains("value"));
  EXPECT_EQ(attrs["ok"]["value"], "fine");
  EXPECT_EQ(attrs["f"]["value"], "inf");
  EXPECT_EQ(attrs["fs"]["value"], nlohmann::json::array({1.5, "nan"}));
}

}  // namespace
}  // namespace slimpack::shard_writer
