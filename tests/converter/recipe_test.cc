// Recipe parsing: strict JSON, unknown keys and bad values named with the
// file, sizes with suffixes, canonical JSON for the manifest.
#include "converter/recipe.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::converter {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(RecipeTest, ParsesEveryKey) {
  auto r = ParseRecipe(R"({"dtype": "bf16", "shard_size": "64M", "passes": []})",
                       "r.json");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->dtype, ir::DType::kBF16);
  EXPECT_EQ(r->shard_size, 64ull << 20);
  ASSERT_TRUE(r->passes.has_value());
  EXPECT_TRUE(r->passes->empty());
  auto n = ParseRecipe(R"({"shard_size": 2097152})", "r.json");
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(n->shard_size, 2097152u);
  EXPECT_FALSE(n->dtype.has_value());
}

TEST(RecipeTest, EmptyObjectIsTheDefaultRecipe) {
  auto r = ParseRecipe("{}", "r.json");
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->dtype.has_value());
  EXPECT_FALSE(r->shard_size.has_value());
}

TEST(RecipeTest, UnknownKeyNamesKeyAndFile) {
  EXPECT_THAT(ParseRecipe(R"({"dtyp": "f16"})", "my_recipe.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("my_recipe.json"),
                             HasSubstr("unknown key 'dtyp'"),
                             HasSubstr("dtype, passes, prune, quant, shard_size"))));
}

TEST(RecipeTest, BadDTypeNamesKeyAndValue) {
  EXPECT_THAT(ParseRecipe(R"({"dtype": "f8"})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("r.json"), HasSubstr("'dtype'"),
                             HasSubstr("\"f8\""), HasSubstr("f16"))));
  EXPECT_THAT(ParseRecipe(R"({"dtype": 16})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'dtype'"), HasSubstr("16"))));
}

TEST(RecipeTest, BadShardSizeNamesKeyAndValue) {
  EXPECT_THAT(ParseRecipe(R"({"shard_size": "12X"})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("r.json"), HasSubstr("'shard_size'"),
                             HasSubstr("\"12X\""))));
  EXPECT_THAT(ParseRecipe(R"({"shard_size": 1000})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'shard_size'"), HasSubstr("1000 bytes"),
                             HasSubstr("1048576"))));
  EXPECT_THAT(ParseRecipe(R"({"shard_size": -5})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'shard_size'"), HasSubstr("-5"))));
  EXPECT_THAT(ParseRecipe(R"({"shard_size": 1.5e9})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'shard_size'")));
}

TEST(RecipeTest, StrictJson) {
  EXPECT_THAT(ParseRecipe(R"({"dtype": "f16", "dtype": "bf16"})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("r.json"), HasSubstr("dtype"))));
  EXPECT_THAT(ParseRecipe(R"({"dtype": "f16",})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("r.json")));
  EXPECT_THAT(ParseRecipe(R"(["f16"])", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a recipe is a JSON object")));
}

TEST(RecipeTest, PassesAndQuantKeys) {
  auto r = ParseRecipe(R"({"passes": ["fuse-bn-into-conv", "fold-constants"],
                           "quant": {"scheme": "int4-g32"}})", "r.json");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r->passes, (std::vector<std::string>{"fuse-bn-into-conv", "fold-constants"}));
  ASSERT_TRUE(r->quant.has_value());
  EXPECT_EQ(RecipeToJson(*r).dump(),
            R"({"passes":["fuse-bn-into-conv","fold-constants"],"quant":{"scheme":"int4-g32"}})");
  // Unset passes (default pipeline) and an explicit empty list differ.
  EXPECT_FALSE(ParseRecipe("{}", "r.json")->passes.has_value());
  EXPECT_THAT(ParseRecipe(R"({"passes": {}})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must be an array")));
  EXPECT_THAT(ParseRecipe(R"({"passes": ["a", 3]})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'passes'[1]"), HasSubstr("pass name"))));
  EXPECT_THAT(ParseRecipe(R"({"quant": "int4"})", "r.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'quant'"), HasSubstr("must be an object"))));
}

TEST(RecipeTest, ReadRecipeFileNamesMissingFile) {
  EXPECT_THAT(ReadRecipeFile("/nonexistent/recipe.json"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("/nonexistent/recipe.json")));
}

TEST(RecipeTest, ByteSizes) {
  EXPECT_EQ(*ParseByteSize("1048576"), 1048576u);
  EXPECT_EQ(*ParseByteSize("64K"), 64u << 10);
  EXPECT_EQ(*ParseByteSize("256M"), 256u << 20);
  EXPECT_EQ(*ParseByteSize("2g"), 2ull << 30);
  EXPECT_EQ(*ParseByteSize("1T"), 1ull << 40);
  EXPECT_THAT(ParseByteSize(""), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("not a byte count")));
  EXPECT_THAT(ParseByteSize("M"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("\"M\"")));
  EXPECT_THAT(ParseByteSize("10MB"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown suffix \"MB\"")));
  EXPECT_THAT(ParseByteSize("99999999999999999999"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows")));
  EXPECT_THAT(ParseByteSize("17000000000T"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows")));
}

TEST(RecipeTest, CanonicalJsonRoundTrips) {
  Recipe r;
  r.dtype = ir::DType::kF16;
  r.shard_size = 1 << 21;
  EXPECT_EQ(RecipeToJson(r).dump(),
            R"({"dtype":"f16","passes":[],"shard_size":2097152})");
  auto again = ParseRecipe(RecipeToJson(r).dump(), "x");
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->dtype, r.dtype);
  EXPECT_EQ(again->shard_size, r.shard_size);
  EXPECT_EQ(RecipeToJson(Recipe{}).dump(), R"({"passes":[]})");
}

}  // namespace
}  // namespace slimpack::converter
