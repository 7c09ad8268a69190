// Strict JSON guard: UTF-8 validation, duplicate keys at any depth, depth
// cap, and agreement with nlohmann on valid input.
#include "support/strict_json.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::support {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

TEST(FindInvalidUtf8Test, AcceptsWellFormedAndFindsFirstBadByte) {
  EXPECT_EQ(FindInvalidUtf8("plain ascii"), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("ab\xff"), 2u);            // never valid
  EXPECT_EQ(FindInvalidUtf8("a\xc0\xaf"), 1u);         // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("a\xed\xa0\x80"), 1u);     // surrogate
  EXPECT_EQ(FindInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // > U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("ok\xe2\x82"), 2u);        // truncated
  EXPECT_EQ(FindInvalidUtf8(std::string_view("a\0b", 3)), std::nullopt);
}

TEST(ParseStrictJsonTest, ParsesValidJsonLikeNlohmann) {
  const std::string text = R"({"a":[1,-2,3.5,{"b":null}],"c":"\u00e9"})";
  auto v = ParseStrictJson(text, "x.json", 8);
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(*v, nlohmann::json::parse(text));
}

TEST(ParseStrictJsonTest, RejectsDuplicateKeysAtAnyDepth) {
  EXPECT_THAT(ParseStrictJson(R"({"a":1,"a":2})", "x.json", 8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("x.json: duplicate key 'a' in top-level")));
  EXPECT_THAT(ParseStrictJson(R"({"t":{"k":[{"z":1,"z":1}]}})", "x.json", 8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("duplicate key 'z' in object at /t/k/[]")));
  // The same key in sibling objects is fine.
  EXPECT_THAT(ParseStrictJson(R"({"a":{"k":1},"b":{"k":1}})", "x.json", 8),
              IsOk());
}

TEST(ParseStrictJsonTest, DepthCapStopsNestingBombs) {
  const std::string bomb = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(ParseStrictJson(bomb, "x.json", 64),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("nested deeper than 64 levels")));
  // Exactly at the cap is allowed.
  const std::string ok = std::string(4, '[') + std::string(4, ']');
  EXPECT_THAT(ParseStrictJson(ok, "x.json", 4), IsOk());
  EXPECT_THAT(
      ParseStrictJson("[" + ok + "]", "x.json", 4),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deeper")));
}

TEST(ParseStrictJsonTest, SyntaxErrorsAndBadUtf8NameTheInput) {
  EXPECT_THAT(ParseStrictJson(R"({"a":})", "cfg.json", 8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cfg.json: not valid JSON (byte 6)")));
  EXPECT_THAT(ParseStrictJson("{} x", "cfg.json", 8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not valid JSON")));
  EXPECT_THAT(ParseStrictJson("{\"a\xff\":1}", "cfg.json", 8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not valid UTF-8 at byte 3")));
  EXPECT_THAT(ParseStrictJson(R"({"a":NaN})", "cfg.json", 8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not valid JSON")));
}

}  // namespace
}  // namespace slimpack::support
