// IsOk() and StatusIs(code, message_matcher) under Abseil's names, since
// Debian 12's Abseil has no absl/status/status_matchers.h.
#ifndef SLIMPACK_TESTS_TESTING_STATUS_MATCHERS_H_
#define SLIMPACK_TESTS_TESTING_STATUS_MATCHERS_H_

#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace absl {
inline void PrintTo(const Status& s, std::ostream* os) { *os << s.ToString(); }
template <typename T>
void PrintTo(const StatusOr<T>& s, std::ostream* os) {
  *os << (s.ok() ? std::string("OK (value)") : s.status().ToString());
}
}  // namespace absl

namespace slimpack::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& s = GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s.ToString();
  return s.ok();
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + absl::StatusCodeToString(code)) {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  if (s.code() != code) return false;
  return ::testing::ExplainMatchResult(message_matcher, std::string(s.message()),
                                       result_listener);
}

}  // namespace slimpack::testing

#endif  // SLIMPACK_TESTS_TESTING_STATUS_MATCHERS_H_
