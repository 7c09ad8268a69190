// The fp8_e4m3_groupwise layout end to end: an FP8 weight with f16 group
// scales is written (manifest layout and feature), read back byte for byte,
// run by the interpreter as its decoded values, and decoded by the
// standalone loader (C++ and C API) bit for bit as the IR's reference
// decoder does. The IR and the loader each decode E4M3 on their own
// (ir/float_convert.cc, loader/dequant_fp8.cc); this holds them equal.
// Run with one scale per row and with rows sharing scales (block_rows 4 of
// 6 rows: a short last block, as a checkpoint's 128 x 128 blocks).
#include <cmath>
#include <cstring>
#include <random>

#include "formats/shard/loader/artifact.h"
#include "formats/shard/loader/dequantize.h"
#include "formats/shard/loader/slimpack_loader.h"
#include "formats/shard/reader/artifact_reader.h"
#include "formats/shard/writer/artifact_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float_convert.h"
#include "ir/quant.h"
#include "ir/verifier.h"
#include "nlohmann/json.hpp"
#include "runtime/interpreter.h"
#include "tests/shard/reader/gemm_fixture.h"
#include "tests/shard/writer/writer_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::shard_reader {
namespace {

using ::slimpack::shard_reader::testing::F32Tensor;
using ::slimpack::shard_reader::testing::RawTensor;
using ::slimpack::shard_writer::testing::ReadFile;
using ::slimpack::shard_writer::testing::TempDir;
using ::slimpack::testing::IsOk;

constexpr int64_t kRows = 6, kCols = 80, kGroup = 32, kBatch = 2;  // a short last group
constexpr int64_t kGroups = (kCols + kGroup - 1) / kGroup;

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// "w" [kRows, kCols]: every finite E4M3 code appears; f16 scales span
// several binades; `block_rows` rows share a scale row.
struct Fp8Weight {
  ir::Tensor codes, scale;
};
int64_t ScaleRows(int64_t block_rows) { return (kRows + block_rows - 1) / block_rows; }
Fp8Weight MakeWeight(int64_t block_rows) {
  const int64_t scale_rows = ScaleRows(block_rows);
  std::mt19937 rng(7);
  std::vector<uint8_t> q(kRows * kCols);
  for (size_t i = 0; i < q.size(); ++i) {
    uint8_t c = static_cast<uint8_t>(i < 256 ? i : rng());
    if ((c & 0x7F) == 0x7F) c = 0x00;  // NaN codes are refused at import
    q[i] = c;
  }
  std::vector<uint8_t> s(scale_rows * kGroups * 2);
  for (int64_t i = 0; i < scale_rows * kGroups; ++i) {
    const float v =
        std::ldexp(1.0f + static_cast<float>(i % 5) / 8.0f, -10 + static_cast<int>(i % 7));
    const uint16_t h = ir::F32ToF16(v);
    std::memcpy(s.data() + 2 * i, &h, 2);
  }
  Fp8Weight w{RawTensor("w", ir::DType::kU8, {kRows, kCols}, std::move(q)),
              RawTensor("w.scale", ir::DType::kF16, {scale_rows, kGroups}, std::move(s))};
  w.codes.quant.kind = ir::QuantKind::kFp8E4M3GroupWise;
  w.codes.quant.axis = 1;
  w.codes.quant.group_size = kGroup;
  w.codes.quant.scale = "w.scale";
  w.codes.quant.algorithm = "fp8";
  if (block_rows > 1) w.codes.quant.block_rows = block_rows;
  return w;
}

// x [kBatch, kCols]
std::vector<float> Input() {
  std::vector<float> x(kBatch * kCols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  return x;
}

ir::Model GemmModel(const std::string& dir, const std::vector<ir::Tensor>& weights) {
  return testing::GemmModel(dir, kBatch, kRows, kCols, weights);
}

std::vector<float> RunGemm(const ir::Model& m) { return testing::RunGemm(m, kBatch, kCols, Input()); }

class Fp8BlockRowsTest : public ::testing::TestWithParam<int64_t> {};  // block_rows

TEST_P(Fp8BlockRowsTest, WrittenReadRunAndDecodedBitForBit) {
  const int64_t block_rows = GetParam();
  TempDir dir;
  const Fp8Weight w = MakeWeight(block_rows);
  const ir::Model src = GemmModel(dir.path(), {w.codes, w.scale});
  ASSERT_THAT(ir::VerifyModel(src), IsOk());
  const std::string out = dir.File("out");
  ASSERT_THAT(shard_writer::WriteArtifact(src, out, {}), IsOk());

  const nlohmann::json m = nlohmann::json::parse(ReadFile(out + "/manifest.json"));
  EXPECT_EQ(m["required_features"],
            nlohmann::json::parse(block_rows > 1 ? R"(["f16_scales","fp8_block_rows","fp8_e4m3"])"
                                                 : R"(["f16_scales","fp8_e4m3"])"));
  const nlohmann::json* t = nullptr;
  for (const nlohmann::json& e : m["tensors"]) {
    if (e["name"] == "w") t = &e;
  }
  ASSERT_NE(t, nullptr);
  EXPECT_EQ((*t)["dtype"], "u8");
  EXPECT_EQ((*t)["layout"]["kind"], "fp8_e4m3_groupwise");
  EXPECT_EQ((*t)["layout"]["axis"], 1);
  EXPECT_EQ((*t)["layout"]["group_size"], kGroup);
  EXPECT_EQ((*t)["layout"]["scale"], "w.scale");
  EXPECT_FALSE((*t)["layout"].contains("zero_point"));
  // Written only when rows share a scale: other manifests keep their bytes.
  EXPECT_EQ((*t)["layout"].contains("block_rows"), block_rows > 1);
  if (block_rows > 1) {
    EXPECT_EQ((*t)["layout"]["block_rows"], block_rows);
  }

  auto back = ReadArtifactModel(out);
  ASSERT_THAT(back, IsOk());
  const ir::Tensor* b = back->graph.FindInitializer("w");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->quant == w.codes.quant);
  ASSERT_EQ(b->data.size(), w.codes.data.size());
  EXPECT_EQ(0, std::memcmp(b->data.data(), w.codes.data.data(), w.codes.data.size()));

  // The IR's decode, checked against the format's definition element by element.
  auto decoded = ir::DequantizeToF32(w.codes, w.scale, nullptr);
  ASSERT_THAT(decoded, IsOk());
  const std::vector<float>& want = *decoded;
  const uint8_t* q = w.codes.data.data();
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) {
      uint16_t h;
      std::memcpy(&h, w.scale.data.data() + 2 * ((r / block_rows) * kGroups + c / kGroup), 2);
      const uint8_t code = q[r * kCols + c];
      const int e = (code >> 3) & 0xF, man = code & 7;
      const double mag = e == 0 ? std::ldexp(man / 8.0, -6) : std::ldexp(1 + man / 8.0, e - 7);
      const float f = static_cast<float>((code & 0x80) ? -mag : mag);
      ASSERT_EQ(Bits(want[r * kCols + c]), Bits(f * ir::F16ToF32(h))) << r << "," << c;
    }
  }

  // The interpreter runs the weight as exactly those values.
  const std::vector<float> y = RunGemm(GemmModel(dir.path(), {F32Tensor("w", {kRows, kCols}, want)}));
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
  uint64_t index = 2;
  for (uint64_t i = 0; i < 2; ++i) {
    slimpack_tensor_info info;
    ASSERT_EQ(slimpack_artifact_tensor_info(c, i, &info), SLIMPACK_OK);
    if (std::string(info.name) != "w") continue;
    index = i;
    EXPECT_EQ(info.layout, SLIMPACK_LAYOUT_FP8_E4M3_GROUPWISE);
    EXPECT_EQ(info.dtype, SLIMPACK_DTYPE_U8);
    EXPECT_EQ(info.group_size, static_cast<uint64_t>(kGroup));
    EXPECT_GE(info.scale_index, 0);
    EXPECT_EQ(slimpack_artifact_tensor_block_rows(c, i), static_cast<uint64_t>(block_rows));
    slimpack_tensor_info scale_info;
    ASSERT_EQ(slimpack_artifact_tensor_info(c, static_cast<uint64_t>(info.scale_index), &scale_info),
              SLIMPACK_OK);
    ASSERT_EQ(scale_info.rank, 2u);
    EXPECT_EQ(scale_info.shape[0], static_cast<uint64_t>(ScaleRows(block_rows)));
    EXPECT_EQ(slimpack_artifact_tensor_block_rows(c, static_cast<uint64_t>(info.scale_index)), 1u);
  }
  EXPECT_EQ(slimpack_artifact_tensor_block_rows(c, 99), 0u);
  ASSERT_LT(index, 2u);
  std::vector<float> got(want.size());
  ASSERT_EQ(slimpack_artifact_dequantize_f32(c, index, got.data(), got.size()), SLIMPACK_OK);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * 4));
  slimpack_artifact_close(c);
}

INSTANTIATE_TEST_SUITE_P(BlockRows, Fp8BlockRowsTest, ::testing::Values(1, 4),
                         [](const auto& info) { return "Rows" + std::to_string(info.param); });

// Every byte, NaN codes and -0 included, decodes to the same f32 bits in
// the loader's table and the IR's bit assembly.
TEST(Fp8ArtifactTest, LoaderAndIrDecodeEveryCodeTheSame) {
  for (int code = 0; code < 256; ++code) {
    const float ir_value = ir::F8E4M3ToF32(static_cast<uint8_t>(code));
    const float loader_value = loader::Fp8E4M3ToFloat(static_cast<uint8_t>(code));
    if (std::isnan(ir_value)) {
      EXPECT_TRUE(std::isnan(loader_value)) << code;
      EXPECT_EQ(std::signbit(ir_value), std::signbit(loader_value)) << code;
    } else {
      EXPECT_EQ(Bits(ir_value), Bits(loader_value)) << code;
    }
  }
}

}  // namespace
}  // namespace slimpack::shard_reader
