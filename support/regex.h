// An ECMAScript regular expression compiled once, for recipe rules and
// keep-float patterns. <regex> is included only by regex.cc: each object
// that instantiates std::regex costs 20-40 s of compile time, and six did.
#ifndef SLIMPACK_SUPPORT_REGEX_H_
#define SLIMPACK_SUPPORT_REGEX_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace slimpack::support {

class Regex {
 public:
  // InvalidArgument carrying the library's reason (e.g. "mismatched
  // parentheses") when `pattern` is not valid ECMAScript; callers add the
  // file and key that held it.
  static absl::StatusOr<Regex> Compile(std::string_view pattern);

  // std::regex_search: does the pattern match anywhere in `text`?
  bool Search(std::string_view text) const;
  // std::regex_match: does it match the whole of `text`?
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
