// support/regex: compile once, Search is regex_search, FullMatch is
// regex_match, a bad pattern is an error carrying the library's reason, and
// copies share one compiled pattern usable from several threads.
#include "support/regex.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace slimpack::support {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RegexTest, SearchFindsThePatternAnywhereFullMatchNeedsAllOfIt) {
  auto re = Regex::Compile(R"(layers\.(1|3)\.mlp)");
  ASSERT_TRUE(re.ok()) << re.status();
  EXPECT_TRUE(re->Search("model.layers.3.mlp.down_proj.weight"));
  EXPECT_FALSE(re->Search("model.layers.2.mlp.down_proj.weight"));
  EXPECT_FALSE(re->FullMatch("model.layers.3.mlp.down_proj.weight"));
  EXPECT_TRUE(re->FullMatch("layers.1.mlp"));
  EXPECT_EQ(re->pattern(), R"(layers\.(1|3)\.mlp)");
}

TEST(RegexTest, AnchorsAndEmptyTextBehaveAsECMAScript) {
  auto re = Regex::Compile("^conv2\\.weight$");
  ASSERT_TRUE(re.ok());
  EXPECT_TRUE(re->Search("conv2.weight"));
  EXPECT_FALSE(re->Search("xconv2.weight"));
  EXPECT_FALSE(re->Search(""));
  auto any = Regex::Compile("");
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(any->Search("anything"));
  EXPECT_TRUE(any->FullMatch(""));
  EXPECT_FALSE(any->FullMatch("a"));
}

TEST(RegexTest, SearchLooksOnlyAtTheViewNotBeyondIt) {
  const std::string text = "abc_tail";
  auto re = Regex::Compile("tail");
  ASSERT_TRUE(re.ok());
  EXPECT_FALSE(re->Search(std::string_view(text).substr(0, 3)));
  EXPECT_TRUE(re->Search(text));
}

TEST(RegexTest, PatternsAndTextsTooBigForStdRegexAreBounded) {
  // 10,000 nested groups overflowed the stack while compiling (SIGSEGV).
  const std::string deep = std::string(10000, '(') + "a" + std::string(10000, ')');
  auto nested = Regex::Compile(deep);
  EXPECT_FALSE(nested.ok());
  EXPECT_THAT(std::string(nested.status().message()), HasSubstr("longer than 1024"));
  auto nested33 = Regex::Compile(std::string(33, '(') + "a" + std::string(33, ')'));
  EXPECT_FALSE(nested33.ok());
  EXPECT_THAT(std::string(nested33.status().message()),
              HasSubstr("pattern nests groups 33 deep (at most 32)"));
  // 32 deep, escaped parentheses and brackets inside a class do not nest.
  EXPECT_TRUE(Regex::Compile(std::string(32, '(') + "a" + std::string(32, ')')).ok());
  EXPECT_TRUE(Regex::Compile(std::string(200, 'x') + R"(\(\(\([(((]+)").ok());
  // A 100,000-byte name searched with "(a|b)*c" overflowed the stack while
  // matching; names past the bound never match.
  auto re = Regex::Compile("(a|b)*c");
  ASSERT_TRUE(re.ok());
  EXPECT_FALSE(re->Search(std::string(100000, 'a') + "c"));
  EXPECT_FALSE(re->FullMatch(std::string(100000, 'a') + "c"));
  EXPECT_TRUE(re->Search(std::string(1000, 'a') + "c"));
  EXPECT_TRUE(re->FullMatch(std::string(1000, 'a') + "c"));
}

TEST(RegexTest, RepeatCountsAndTheirExpansionAreBounded) {
  // fuzz_recipe: libstdc++ multiplied this count by 10 past LONG_MAX
  // (UBSan signed overflow in regex_compiler.tcc), as it reads every digit
  // of a backreference.
  auto huge = Regex::Compile("blk\\.[0-9]{1111111111111111111}");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(huge.status().message()),
              HasSubstr("repeat count '{1111111111111111111}' at byte 10 is above 1024"));
  // The input fuzz_recipe found: a backreference number read the same way.
  auto backref = Regex::Compile(R"(I^^\\\1111111111111111111111111^^)");
  ASSERT_FALSE(backref.ok());
  EXPECT_THAT(std::string(backref.status().message()),
              HasSubstr("backreference '\\1111111111111111111111111' at byte 5 has more than 3 "
                        "digits"));
  auto group1 = Regex::Compile(R"(^(a)\1$)");
  ASSERT_TRUE(group1.ok()) << group1.status();
  EXPECT_TRUE(group1->FullMatch("aa"));
  EXPECT_FALSE(group1->FullMatch("ab"));
  EXPECT_FALSE(Regex::Compile("a{1,1025}").ok());
  EXPECT_FALSE(Regex::Compile("a{1025,}").ok());
  // Nested counts multiply: 999^3 copies would be a billion states.
  auto nested = Regex::Compile("((a{999}){999}){999}");
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(std::string(nested.status().message()),
              HasSubstr("expands its {n,m} repeats to more than 65536 states"));
  // Counts at the bound, escaped braces and braces in a bracket class
  // are ordinary patterns that still match as ECMAScript says.
  auto at_bound = Regex::Compile("^a{1024}$");
  ASSERT_TRUE(at_bound.ok()) << at_bound.status();
  EXPECT_TRUE(at_bound->FullMatch(std::string(1024, 'a')));
  EXPECT_FALSE(at_bound->FullMatch(std::string(1023, 'a')));
  auto layers = Regex::Compile(R"(blk\.[0-9]{1,3}\.(attn_v|ffn_down)\.weight)");
  ASSERT_TRUE(layers.ok()) << layers.status();
  EXPECT_TRUE(layers->FullMatch("blk.12.attn_v.weight"));
  EXPECT_FALSE(layers->FullMatch("blk.1234.attn_v.weight"));
  auto literal = Regex::Compile(R"(\{99999999999\}[{9999999999}])");
  ASSERT_TRUE(literal.ok()) << literal.status();
  EXPECT_TRUE(literal->Search("{99999999999}9"));
}

TEST(RegexTest, InvalidPatternIsInvalidArgumentNotAThrow) {
  for (const char* bad : {"(unclosed", "[z-a]", "*lead", "a{2,1}"}) {
    auto re = Regex::Compile(bad);
    ASSERT_FALSE(re.ok()) << bad;
    EXPECT_EQ(re.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(re.status().message()), Not(HasSubstr(bad))) << "callers name it";
    EXPECT_FALSE(re.status().message().empty()) << bad;
  }
}

TEST(RegexTest, CopiesMatchTheSameFromSeveralThreads) {
  auto re = Regex::Compile("^w[0-9]+$");
  ASSERT_TRUE(re.ok());
  std::vector<int> hits(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([copy = *re, &hits, t] {
      for (int i = 0; i < 200; ++i) hits[t] += copy.Search("w" + std::to_string(i)) ? 1 : 0;
      hits[t] += copy.Search("x1") ? 1 : 0;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(hits, std::vector<int>(4, 200));
}

}  // namespace
}  // namespace slimpack::support
