#include "support/regex.h"

#include <algorithm>
#include <regex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace slimpack::support {

struct Regex::Impl {
  std::string pattern;
  std::regex re;
};

namespace {

// How deep groups (and bracket classes) nest; escapes skipped.
int Nesting(std::string_view pattern) {
  int depth = 0, deepest = 0;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
      deepest = std::max(deepest, depth + 1);
    } else if (c == '(') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ')') {
      depth = std::max(0, depth - 1);
    }
  }
  return deepest;
}

}  // namespace

absl::StatusOr<Regex> Regex::Compile(std::string_view pattern) {
  if (pattern.size() > kMaxRegexPatternBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("pattern of ", pattern.size(), " bytes is longer than ",
                     kMaxRegexPatternBytes, " (patterns are matched against tensor names)"));
  }
  if (const int depth = Nesting(pattern); depth > kMaxRegexNesting) {
    return absl::InvalidArgumentError(absl::StrCat("pattern nests groups ", depth,
                                                   " deep (at most ", kMaxRegexNesting, ")"));
  }
  auto impl = std::make_shared<Impl>();
  impl->pattern = std::string(pattern);
  try {
    impl->re = std::regex(impl->pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(e.what());
  }
  return Regex(std::move(impl));
}

bool Regex::Search(std::string_view text) const {
  if (text.size() > kMaxRegexTextBytes) return false;
  return std::regex_search(text.begin(), text.end(), impl_->re);
}

bool Regex::FullMatch(std::string_view text) const {
  if (text.size() > kMaxRegexTextBytes) return false;
  return std::regex_match(text.begin(), text.end(), impl_->re);
}

const std::string& Regex::pattern() const { return impl_->pattern; }

}  // namespace slimpack::support
