// export/genai_config: the file ONNX Runtime GenAI reads beside a KV-cache
// decoder, from the tiny-llama's config.json, with generation_config.json
// taking precedence; what it refuses. tests/export/onnx_ort_test.sh checks
// it against the exported model and drives generation from it.
#include "export/genai_config.h"

#include "formats/safetensors/checkpoint_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_export {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using nlohmann::json;

ir::ArchitectureInfo TinyArchitecture() {
  auto model = safetensors::ImportSafetensors(SLIMPACK_TINY_LLAMA_DIR);
  EXPECT_THAT(model, IsOk());
  return *model->architecture;
}

TEST(GenaiConfigTest, DescribesTheDecoderFromConfigJson) {
  auto text = GenaiConfigJson(TinyArchitecture(), "model.onnx", "");
  ASSERT_THAT(text, IsOk());
  const json c = json::parse(*text);
  const json& d = c["model"]["decoder"];
  EXPECT_EQ(d["filename"], "model.onnx");
  EXPECT_EQ(d["num_hidden_layers"], 4);
  EXPECT_EQ(d["num_attention_heads"], 4);
  EXPECT_EQ(d["num_key_value_heads"], 2);
  EXPECT_EQ(d["head_size"], 32);
  EXPECT_EQ(d["hidden_size"], 128);
  EXPECT_EQ(d["inputs"]["past_key_names"], "past_key_values.%d.key");
  EXPECT_EQ(d["outputs"]["present_value_names"], "present.%d.value");
  EXPECT_EQ(c["model"]["type"], "llama");
  EXPECT_EQ(c["model"]["context_length"], 128);
  EXPECT_EQ(c["model"]["vocab_size"], 258);
  EXPECT_EQ(c["model"]["bos_token_id"], 256);
  EXPECT_EQ(c["model"]["eos_token_id"], 257);
  EXPECT_EQ(c["model"]["pad_token_id"], 257);  // config.json's pad is null: eos
  EXPECT_EQ(c["search"]["past_present_share_buffer"], false);
  EXPECT_EQ(c["search"]["do_sample"], false);
  EXPECT_EQ(c["search"]["max_length"], 128);
}

TEST(GenaiConfigTest, GenerationConfigTakesPrecedence) {
  auto text = GenaiConfigJson(TinyArchitecture(), "m.onnx",
                              R"({"eos_token_id": [257, 10], "do_sample": true, "top_k": 5,
                                  "temperature": 0.7})");
  ASSERT_THAT(text, IsOk());
  const json c = json::parse(*text);
  EXPECT_EQ(c["model"]["eos_token_id"], json({257, 10}));
  EXPECT_EQ(c["model"]["pad_token_id"], 257);  // the first eos
  EXPECT_EQ(c["search"]["do_sample"], true);
  EXPECT_EQ(c["search"]["top_k"], 5);
  EXPECT_DOUBLE_EQ(c["search"]["temperature"].get<double>(), 0.7);
  EXPECT_EQ(c["search"]["top_p"], 1.0);  // untouched default
}

TEST(GenaiConfigTest, RefusesWhatItCannotDescribe) {
  EXPECT_THAT(GenaiConfigJson(TinyArchitecture(), "m.onnx", "[1, 2]").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("generation_config.json")));
  EXPECT_THAT(GenaiConfigJson(TinyArchitecture(), "m.onnx", "{\"a\": 1, \"a\": 2}").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("generation_config.json")));
  ir::ArchitectureInfo pruned = TinyArchitecture();
  pruned.config_json.insert(pruned.config_json.rfind('}'),
                            ",\n  \"num_key_value_heads_per_layer\": [2, 1, 1, 2]\n");
  EXPECT_THAT(GenaiConfigJson(pruned, "m.onnx", "").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("different head counts")));
}

}  // namespace
}  // namespace slimpack::onnx_export
