// Recipes for llama-quantize types (converter/gguf_recipe.h): what they
// accept, and a refusal naming the file and key for everything else,
// including the committed examples/recipes presets.
#include "converter/gguf_recipe.h"

#include "converter/convert_gguf.h"

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace slimpack::converter {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using testing::IsOk;
using testing::StatusIs;

std::string Write(const slimpack::testing::TempDir& dir, const std::string& text,
                  const std::string& name = "recipe.json") {
  const std::string path = dir.File(name);
  std::ofstream(path) << text;
  return path;
}

TEST(GgmlRecipeTest, ReadsSchemeAlgorithmAndRulesInOrder) {
  slimpack::testing::TempDir dir;
  const std::string path = Write(dir, R"({"quant": {"scheme": "Q4_K_M", "algorithm": "imatrix",
      "rules": [{"match": "v_proj", "scheme": "q6_k"}, {"scheme": "Q8_0", "match": "lm_head"}]}})");
  auto r = ReadGgmlRecipe(path);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->scheme, "Q4_K_M");
  EXPECT_EQ(r->algorithm, "imatrix");
  EXPECT_THAT(r->rules, ElementsAre(Pair("v_proj", "q6_k"), Pair("lm_head", "Q8_0")));
  EXPECT_EQ(r->target_bpw, 0);
  auto sized = ReadGgmlRecipe(Write(
      dir, R"({"quant": {"scheme": "q4_k_m", "target_bpw": 4.25, "calib_samples": 32}})",
      "sized.json"));
  ASSERT_THAT(sized, IsOk());
  EXPECT_EQ(sized->target_bpw, 4.25);
  EXPECT_EQ(sized->calib_samples, 32);
  ConvertFlags flags;
  flags.recipe_path = path;
  EXPECT_EQ(GgmlSchemeOf(flags), "Q4_K_M");
  flags.quant = "int4";  // --quant wins over the recipe
  EXPECT_EQ(GgmlSchemeOf(flags), "");
  flags.quant = "q8_0";
  EXPECT_EQ(GgmlSchemeOf(flags), "q8_0");
}

std::string SchemeOf(const std::string& recipe_path) {
  ConvertFlags flags;
  flags.recipe_path = recipe_path;
  return GgmlSchemeOf(flags);
}

TEST(GgmlRecipeTest, SlimpackSchemesAreNotGgmlRecipes) {
  slimpack::testing::TempDir dir;
  EXPECT_EQ(SchemeOf(Write(dir, R"({"quant": {"scheme": "int4-g128"}})")), "");
  EXPECT_EQ(SchemeOf(Write(dir, R"({"quant": {"scheme": "f16"}})")), "");
  EXPECT_EQ(SchemeOf(Write(dir, R"({"quant": {"scheme": 4}})")), "");
  EXPECT_EQ(SchemeOf(Write(dir, "not json")), "");
  EXPECT_EQ(SchemeOf(dir.File("missing.json")), "");
  ConvertFlags from;
  from.recipe_from = dir.File("no-such-artifact");
  EXPECT_EQ(GgmlSchemeOf(from), "");
}

TEST(GgmlRecipeTest, RefusesWhatItDoesNotUnderstandNamingFileAndKey) {
  slimpack::testing::TempDir dir;
  const struct {
    const char* text;
    const char* message;
  } kCases[] = {
      {R"({"dtype": "f16", "quant": {"scheme": "q4_k_m"}})",
       "recipe.json: dtype: not supported with a llama-quantize scheme"},
      {R"({"quant": {"scheme": "q4_k_m", "candidates": ["q4_k"]}})",
       "recipe.json: quant.candidates: not supported with a llama-quantize scheme"},
      {R"({"quant": {"scheme": "q4_k_m", "calib_samples": -3}})",
       "quant.calib_samples: expected a positive integer, found -3"},
      {R"({"quant": {"scheme": "q4_k_m", "target_bpw": 0}})",
       "quant.target_bpw: expected a number of bits in (0, 16], found 0"},
      {R"({"quant": {"scheme": "q4_k_m", "target_bpw": "4.5"}})",
       "quant.target_bpw: expected a number of bits in (0, 16], found \"4.5\""},
      {R"({"quant": {"scheme": "q4_k_x"}})", "quant.scheme: GGUF type 'q4_k_x' is not one of"},
      {R"({"quant": {"scheme": "q4_k_m", "algorithm": "rtn-mse"}})",
       "quant.algorithm: 'rtn-mse' is not one of rtn, imatrix, gptq, awq"},
      {R"({"quant": {"scheme": "q4_k_m", "rules": {"match": "x"}}})",
       "quant.rules: expected an array, found object"},
      {R"({"quant": {"scheme": "q4_k_m", "rules": [{"op": "Gather", "scheme": "q8_0"}]}})",
       "quant.rules[0].op: not supported with a llama-quantize scheme"},
      {R"({"quant": {"scheme": "q4_k_m", "rules": [{"match": "v_proj"}]}})",
       "quant.rules[0]: needs \"match\" and \"scheme\""},
      {R"({"quant": {"scheme": "q4_k_m", "rules": [{"match": "v", "scheme": "q6_k"},
                                                    {"match": "x", "scheme": "int4"}]}})",
       "quant.rules[1]: type 'int4' for 'x' is not a GGUF tensor type"},
      {R"({"quant": {"scheme": "q4_k_m", "rules": [{"match": "(", "scheme": "q6_k"}]}})",
       "quant.rules[0]: invalid regex '('"},
      {R"({"quant": {"scheme": "q4_k_m", "rules": [{"match": 3, "scheme": "q6_k"}]}})",
       "quant.rules[0].match: expected a string"},
  };
  for (const auto& c : kCases) {
    EXPECT_THAT(ReadGgmlRecipe(Write(dir, c.text)).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.text;
  }
}

TEST(GgmlRecipeTest, CommittedPresetsParse) {
  for (const char* name : {"q4_k_m-attn-v-q6k.json", "q5_k_m-attn-v-q8.json"}) {
    auto r = ReadGgmlRecipe(std::string(SLIMPACK_SOURCE_DIR) + "/examples/recipes/" + name);
    ASSERT_THAT(r, IsOk()) << name;
    EXPECT_FALSE(r->rules.empty()) << name;
  }
}

}  // namespace
}  // namespace slimpack::converter
