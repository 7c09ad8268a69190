// Strict JSON reader: what it accepts exactly, and each malformed input of
// bad-inputs.md item 42 it must reject with a located message.
#include "formats/shard/loader/json_reader.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shard/loader/loader_matchers.h"

namespace slimpack::loader {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;

TEST(JsonReaderTest, ParsesEveryValueType) {
  auto v = ParseJson(R"( {"a": [1, -2, 3.5, 1e2], "b": true, "c": null,
                        "d": "x\u00e9\ud83d\ude00\n", "e": {}} )");
  ASSERT_THAT(v, IsOk());
  const JsonValue& root = v->root();
  ASSERT_TRUE(root.is_object());
  EXPECT_EQ(root.size(), 5u);
  const JsonValue* a = root.Find("a");
  ASSERT_NE(a, nullptr);
  std::vector<const JsonValue*> items;
  for (const JsonValue& item : a->items()) items.push_back(&item);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_TRUE(items[0]->is_int());
  EXPECT_EQ(items[0]->int_value(), 1);
  EXPECT_EQ(items[1]->int_value(), -2);
  EXPECT_TRUE(items[2]->is_double());
  EXPECT_EQ(items[2]->number_value(), 3.5);
  EXPECT_TRUE(items[3]->is_double());  // exponent: not an integer token
  EXPECT_EQ(items[3]->number_value(), 100.0);
  EXPECT_TRUE(root.Find("b")->bool_value());
  EXPECT_TRUE(root.Find("c")->is_null());
  EXPECT_EQ(root.Find("d")->string_value(), "x\xC3\xA9\xF0\x9F\x98\x80\n");
  EXPECT_TRUE(root.Find("e")->is_object());
  EXPECT_EQ(root.Find("e")->size(), 0u);
  EXPECT_EQ(root.Find("zz"), nullptr);
  std::vector<std::string_view> keys;
  for (const JsonValue& m : root.members()) keys.push_back(m.key());
  EXPECT_THAT(keys, ::testing::ElementsAre("a", "b", "c", "d", "e"));
}

TEST(JsonReaderTest, IntegersAreExactToInt64Limits) {
  auto v = ParseJson("[9223372036854775807, -9223372036854775808, 9007199254740993]");
  ASSERT_THAT(v, IsOk());
  std::vector<int64_t> values;
  for (const JsonValue& item : v->root().items()) values.push_back(item.int_value());
  // 2^53 + 1 stays exact.
  EXPECT_THAT(values, ::testing::ElementsAre(INT64_MAX, INT64_MIN, 9007199254740993));
  EXPECT_THAT(ParseJson("9223372036854775808"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("64 bits")));
  EXPECT_THAT(ParseJson("-9223372036854775809"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("64 bits")));
}

TEST(JsonReaderTest, RecordsValueOffsets) {
  const std::string text = R"({"k": "abc", "n": 12})";
  auto v = ParseJson(text);
  ASSERT_THAT(v, IsOk());
  const JsonValue* k = v->root().Find("k");
  EXPECT_EQ(text.substr(k->begin_offset(), k->end_offset() - k->begin_offset()),
            "\"abc\"");
  const JsonValue* n = v->root().Find("n");
  EXPECT_EQ(text.substr(n->begin_offset(), n->end_offset() - n->begin_offset()), "12");
}

struct BadJson {
  const char* name;
  std::string text;
  StatusCode code;
  const char* message;
};

void PrintTo(const BadJson& c, std::ostream* os) { *os << c.name; }

class JsonRejectTest : public ::testing::TestWithParam<BadJson> {};

TEST_P(JsonRejectTest, Rejects) {
  const BadJson& c = GetParam();
  EXPECT_THAT(ParseJson(c.text), StatusIs(c.code, HasSubstr(c.message)));
}

std::string Nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
}

std::string ManyKeys(int n, bool duplicate_last) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) {
    s += (i ? "," : "") + std::string("\"k") +
         std::to_string(duplicate_last && i == n - 1 ? 3 : i) + "\": 1";
  }
  return s + "}";
}

INSTANTIATE_TEST_SUITE_P(
    Strict, JsonRejectTest,
    ::testing::Values(
        BadJson{"Bom", "\xEF\xBB\xBF{}", StatusCode::kInvalidArgument, "byte order mark"},
        BadJson{"DuplicateKey", R"({"a": 1, "a": 2})", StatusCode::kInvalidArgument,
                "duplicate key \"a\""},
        BadJson{"DuplicateKeyInLargeObject", ManyKeys(40, true),
                StatusCode::kInvalidArgument, "duplicate key \"k3\""},
        BadJson{"NaN", "[NaN]", StatusCode::kInvalidArgument, "unexpected character 'N'"},
        BadJson{"Infinity", "[Infinity]", StatusCode::kInvalidArgument,
                "unexpected character 'I'"},
        BadJson{"NegativeInfinity", "[-Infinity]", StatusCode::kInvalidArgument,
                "followed by digits"},
        BadJson{"HugeDouble", "[1e999]", StatusCode::kInvalidArgument, "out of the range"},
        BadJson{"LeadingZero", "[012]", StatusCode::kInvalidArgument, "leading zeros"},
        BadJson{"TrailingComma", "[1,]", StatusCode::kInvalidArgument, "expected a value"},
        BadJson{"TrailingData", "{} x", StatusCode::kInvalidArgument, "after the end"},
        BadJson{"ControlCharInString", "[\"a\tb\"]", StatusCode::kInvalidArgument,
                "control character"},
        BadJson{"InvalidUtf8", "[\"\xFF\"]", StatusCode::kInvalidArgument, "invalid UTF-8"},
        BadJson{"OverlongUtf8", "[\"\xC0\x80\"]", StatusCode::kInvalidArgument,
                "invalid UTF-8"},
        BadJson{"EncodedSurrogateUtf8", "[\"\xED\xA0\x80\"]",
                StatusCode::kInvalidArgument, "invalid UTF-8"},
        BadJson{"TruncatedUtf8", "[\"\xE2\x82\"]", StatusCode::kInvalidArgument,
                "invalid UTF-8"},
        BadJson{"LoneHighSurrogateEscape", R"(["\ud800"])", StatusCode::kInvalidArgument,
                "unpaired high surrogate"},
        BadJson{"LoneLowSurrogateEscape", R"(["\udc00"])", StatusCode::kInvalidArgument,
                "unpaired low surrogate"},
        BadJson{"BadEscape", R"(["\x41"])", StatusCode::kInvalidArgument, "invalid escape"},
        BadJson{"SingleQuotes", "['a']", StatusCode::kInvalidArgument,
                "unexpected character"},
        BadJson{"Unterminated", "{\"a\": [1, 2", StatusCode::kInvalidArgument,
                "unterminated array"},
        BadJson{"Empty", "", StatusCode::kInvalidArgument, "unexpected end"},
        BadJson{"TooDeep", Nested(65), StatusCode::kResourceExhausted,
                "deeper than the limit of 64"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(JsonReaderTest, NestedContainersKeepTheirChildren) {
  const std::string text = R"({"x": [[1, 2], {"y": [3]}, []], "z": "a\"b"})";
  auto v = ParseJson(text);
  ASSERT_THAT(v, IsOk());
  const JsonValue* x = v->root().Find("x");
  ASSERT_EQ(x->size(), 3u);
  auto it = x->items().begin();
  EXPECT_EQ(it->size(), 2u);
  ++it;
  ASSERT_TRUE(it->is_object());
  EXPECT_EQ(it->Find("y")->items().begin()->int_value(), 3);
  ++it;
  EXPECT_TRUE(it->is_array());
  EXPECT_EQ(it->size(), 0u);
  ++it;
  EXPECT_TRUE(it == x->items().end());
  EXPECT_EQ(v->root().Find("z")->string_value(), "a\"b");  // decoded copy
  // Moving the document keeps views valid.
  JsonDocument moved = std::move(v).value();
  EXPECT_EQ(moved.root().Find("z")->string_value(), "a\"b");
}

TEST(JsonReaderTest, DepthLimitIsInclusive) {
  EXPECT_THAT(ParseJson(Nested(64)), IsOk());
}

TEST(JsonReaderTest, ErrorNamesLineAndColumn) {
  EXPECT_THAT(ParseJson("{\n  \"a\": 1,\n  \"a\": 2}"),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("(line 3, column 3): duplicate key")));
}

}  // namespace
}  // namespace slimpack::loader
