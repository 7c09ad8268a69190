// An ECMAScript regular expression compiled once, for recipe rules and
// keep-float patterns. <regex> is included only by regex.cc: each object
// that instantiates std::regex costs 20-40 s of compile time, and six did.
#ifndef SLIMPACK_SUPPORT_REGEX_H_
#define SLIMPACK_SUPPORT_REGEX_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace slimpack::support {

// libstdc++'s std::regex compiles and matches by recursion: a pattern of
// 10,000 nested groups, or a 16 KiB name searched with "(a|b)*c", overflows
// an 8 MiB stack (SIGSEGV). Patterns and texts are therefore bounded: rules
// match tensor and node names, which are far shorter.
inline constexpr size_t kMaxRegexPatternBytes = 1024;
inline constexpr int kMaxRegexNesting = 32;  // groups and classes inside each other
inline constexpr size_t kMaxRegexTextBytes = 1024;
// libstdc++ reads a `{n,m}` count into a long without checking for overflow
// (signed overflow on "{1111111111111111111}"), and compiles a count by
// copying the repeated states n times, so "((a{999}){999}){999}" needs 10^9
// states. A count above the longest text can never change what matches, and
// the copies the whole pattern would need are bounded too.
inline constexpr long kMaxRegexRepeatCount = 1024;
inline constexpr long kMaxRegexExpandedStates = 1 << 16;

class Regex {
 public:
  // InvalidArgument carrying the library's reason (e.g. "mismatched
  // parentheses") when `pattern` is not valid ECMAScript, or naming the
  // bound when it is longer than kMaxRegexPatternBytes or nests deeper than
  // kMaxRegexNesting, or has a `{n,m}` count above kMaxRegexRepeatCount, or
  // would expand to more than kMaxRegexExpandedStates; callers add the file and key that held it. (A
  // pattern that backtracks exponentially, "(a*)*b", is not detected: it
  // is slow on long names, as in any backtracking engine.)
  static absl::StatusOr<Regex> Compile(std::string_view pattern);

  // std::regex_search: does the pattern match anywhere in `text`? A text
  // longer than kMaxRegexTextBytes (a name no real model has; a hostile
  // file may) never matches.
  bool Search(std::string_view text) const;
  // std::regex_match: does it match the whole of `text`? Same bound.
  bool FullMatch(std::string_view text) const;

  const std::string& pattern() const;

 private:
  struct Impl;
  explicit Regex(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  // Shared and immutable, so a Regex copies cheaply and matches from any thread.
  std::shared_ptr<const Impl> impl_;
};

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_REGEX_H_
