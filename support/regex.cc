#include "support/regex.h"

#include <regex>

#include "absl/status/status.h"

namespace slimpack::support {

struct Regex::Impl {
  std::string pattern;
  std::regex re;
};

absl::StatusOr<Regex> Regex::Compile(std::string_view pattern) {
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
  return std::regex_search(text.begin(), text.end(), impl_->re);
}

bool Regex::FullMatch(std::string_view text) const {
  return std::regex_match(text.begin(), text.end(), impl_->re);
}

const std::string& Regex::pattern() const { return impl_->pattern; }

}  // namespace slimpack::support
