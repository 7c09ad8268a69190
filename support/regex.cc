#include "support/regex.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <vector>

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

// Checks every `{n}`, `{n,}` and `{n,m}` count, every backreference number,
// and the number of atoms the
// pattern expands to once each count copies what it repeats (nested counts
// multiply). Escapes and bracket classes are one atom; alternation is summed,
// which overestimates a little and is safe.
absl::Status CheckRepeats(std::string_view pattern) {
  // Expanded size of each open group, innermost last, and of the atom a
  // count would apply to (0 when the previous token cannot be repeated).
  std::vector<long> group_sizes = {0};
  long last_atom = 0;
  auto add_atom = [&](long size) {
    group_sizes.back() = std::min(group_sizes.back() + size, kMaxRegexExpandedStates + 1);
    last_atom = size;
  };
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;
      // "\1" to "\9" start a backreference, and libstdc++ reads every
      // digit after them into a long (overflowing as a count does).
      if (i < pattern.size() && pattern[i] >= '1' && pattern[i] <= '9') {
        size_t end = i;
        while (end < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[end]))) {
          ++end;
        }
        if (end - i > 3) {
          return absl::InvalidArgumentError(absl::StrCat(
              "backreference '\\", std::string(pattern.substr(i, std::min<size_t>(end - i, 32))),
              "' at byte ", i - 1, " has more than 3 digits"));
        }
        i = end - 1;
      }
      add_atom(1);
    } else if (c == '[') {
      // A class ends at the first unescaped ']' after its first character.
      size_t j = i + 1;
      if (j < pattern.size() && pattern[j] == '^') ++j;
      if (j < pattern.size() && pattern[j] == ']') ++j;
      while (j < pattern.size() && pattern[j] != ']') j += pattern[j] == '\\' ? 2 : 1;
      i = j;
      add_atom(1);
    } else if (c == '(') {
      group_sizes.push_back(0);
      last_atom = 0;
    } else if (c == ')') {
      if (group_sizes.size() == 1) {
        last_atom = 0;  // unbalanced: std::regex says so
        continue;
      }
      const long inner = group_sizes.back();
      group_sizes.pop_back();
      add_atom(std::max(inner, 1L));
    } else if (c == '{' && i + 1 < pattern.size() &&
               std::isdigit(static_cast<unsigned char>(pattern[i + 1]))) {
      long most = 0;
      size_t j = i + 1;
      while (j < pattern.size() && (std::isdigit(static_cast<unsigned char>(pattern[j])) ||
                                    pattern[j] == ',')) {
        long count = 0;
        while (j < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[j]))) {
          count = std::min(count * 10 + (pattern[j] - '0'), kMaxRegexRepeatCount + 1);
          ++j;
        }
        if (count > kMaxRegexRepeatCount) {
          const std::string shown(pattern.substr(i, std::min<size_t>(j - i + 1, 32)));
          return absl::InvalidArgumentError(
              absl::StrCat("repeat count '", shown,
                           "' at byte ", i, " is above ", kMaxRegexRepeatCount,
                           " (names are at most ", kMaxRegexTextBytes, " bytes)"));
        }
        // "{n,}" copies n then loops: n + 1 copies.
        most = std::max(most, count + (j < pattern.size() && pattern[j] == ',' ? 1 : 0));
        if (j < pattern.size() && pattern[j] == ',') ++j;
      }
      i = j;  // at the closing '}' (std::regex checks it is there)
      const long extra = last_atom * (std::max(most, 1L) - 1);
      group_sizes.back() = std::min(group_sizes.back() + extra, kMaxRegexExpandedStates + 1);
      last_atom = 0;
    } else if (c == '|') {
      last_atom = 0;
    } else if (c == '*' || c == '+' || c == '?' || c == '^' || c == '$') {
      last_atom = 0;
    } else {
      add_atom(1);
    }
    if (group_sizes.back() > kMaxRegexExpandedStates) break;
  }
  long total = 0;
  for (long size : group_sizes) total = std::min(total + size, kMaxRegexExpandedStates + 1);
  if (total > kMaxRegexExpandedStates) {
    return absl::InvalidArgumentError(
        absl::StrCat("pattern expands its {n,m} repeats to more than ", kMaxRegexExpandedStates,
                     " states"));
  }
  return absl::OkStatus();
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
  if (absl::Status repeats = CheckRepeats(pattern); !repeats.ok()) return repeats;
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
