// formats::ImportModel dispatch and the numbers `slimpack inspect` prints, on a sharded
// BF16 checkpoint built here (the ONNX side is checked against the onnx
// Python package in tests/cli).
#include <fstream>

#include "formats/import.h"
#include "converter/model_summary.h"
#include "formats/safetensors/safetensors_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::converter {
namespace {

using ::slimpack::safetensors::testing::IndexJson;
using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::TinyDecoder;
using ::slimpack::safetensors::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

// Writes `decoder` as BF16 tensors split over two shards + index + config.
void WriteShardedBf16(const TempDir& dir, const TinyDecoder& decoder) {
  std::vector<ir::Tensor> tensors = decoder.Tensors();
  std::vector<ir::Tensor> first, second;
  std::map<std::string, std::string> weight_map;
  for (size_t i = 0; i < tensors.size(); ++i) {
    bool in_first = i < tensors.size() / 2;
    std::string shard = in_first ? "model-00001-of-00002.safetensors"
                                 : "model-00002-of-00002.safetensors";
    weight_map[tensors[i].name] = shard;
    (in_first ? first : second).push_back(tensors[i]);
  }
  ASSERT_THAT(safetensors::WriteSafetensorsFile(
                  dir.File("model-00001-of-00002.safetensors"), first),
              IsOk());
  ASSERT_THAT(safetensors::WriteSafetensorsFile(
                  dir.File("model-00002-of-00002.safetensors"), second),
              IsOk());
  WriteFile(dir.File("model.safetensors.index.json"), IndexJson(weight_map, 0));
  WriteFile(dir.File("config.json"), decoder.ConfigJson());
  WriteFile(dir.File("tokenizer.json"), "{}");
}

TEST(ImportSummaryTest, ShardedBf16CheckpointCountsEveryParameter) {
  TempDir dir;
  TinyDecoder decoder;
  for (auto& t : decoder.Tensors()) ASSERT_EQ(t.dtype, ir::DType::kBF16);
  WriteShardedBf16(dir, decoder);

  auto kind = formats::DetectInputKind(dir.path());
  ASSERT_THAT(kind, IsOk());
  EXPECT_EQ(*kind, formats::InputKind::kSafetensors);
  auto model = formats::ImportModel(dir.path());
  ASSERT_THAT(model, IsOk());

  // Expected from the layout: embed + per layer (q,k,v,o, gate/up/down, two
  // norms) + final norm + lm_head.
  const int64_t h = decoder.hidden, kv = decoder.kv_heads * decoder.head_dim,
                q = decoder.heads * decoder.head_dim, f = decoder.intermediate,
                v = decoder.vocab;
  const uint64_t per_layer = q * h + 2 * kv * h + h * q + 3 * h * f + 2 * h;
  const uint64_t expected = v * h + decoder.layers * per_layer + h + v * h;
  ModelSummary s = Summarize(*model);
  EXPECT_EQ(s.parameter_count, expected);
  EXPECT_EQ(s.parameter_bytes, expected * 2);
  ASSERT_EQ(s.by_dtype.size(), 1u);
  EXPECT_EQ(s.by_dtype.at("bf16").elements, expected);
  EXPECT_EQ(s.tensor_count, 2 + 9 * static_cast<uint64_t>(decoder.layers) + 1);
  EXPECT_EQ(s.zero_copy_bytes, s.parameter_bytes);  // mmap views, no copies
  EXPECT_EQ(s.by_role.at("q_proj"), static_cast<uint64_t>(decoder.layers));
  EXPECT_EQ(s.by_role.at("lm_head"), 1u);
  EXPECT_EQ(s.node_count, 0u);
  ASSERT_TRUE(model->architecture.has_value());
  EXPECT_EQ(model->architecture->num_kv_heads, decoder.kv_heads);
  EXPECT_EQ(model->input_files.size(), 4u);  // 2 shards, index, config
  EXPECT_THAT(model->carried_files,
              ::testing::Contains(HasSubstr("tokenizer.json")));
}

TEST(ImportSummaryTest, UnknownInputsAreRejectedWithTheSupportedList) {
  TempDir dir;
  WriteFile(dir.File("weights.bin"), "garbage that is no model at all");
  EXPECT_THAT(formats::ImportModel(dir.File("weights.bin")),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("supported inputs")));
  EXPECT_THAT(formats::ImportModel(dir.File("missing.onnx")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.onnx")));
  EXPECT_THAT(formats::ImportModel(dir.path()),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("directory holds no")));
}

}  // namespace
}  // namespace slimpack::converter
