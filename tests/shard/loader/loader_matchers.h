// IsOk() and StatusIs(code, message_matcher) for the loader's own Status and
// Result (the loader does not use absl, so tests/testing/status_matchers.h
// does not apply).
#ifndef SLIMPACK_TESTS_SHARD_LOADER_LOADER_MATCHERS_H_
#define SLIMPACK_TESTS_SHARD_LOADER_LOADER_MATCHERS_H_

#include <ostream>
#include <string>

#include "formats/shard/loader/status.h"
#include "gmock/gmock.h"

namespace slimpack::loader {
inline void PrintTo(const Status& s, std::ostream* os) { *os << s.ToString(); }
inline void PrintTo(StatusCode c, std::ostream* os) { *os << StatusCodeName(c); }
template <typename T>
void PrintTo(const Result<T>& r, std::ostream* os) {
  *os << (r.ok() ? std::string("OK (value)") : r.status().ToString());
}
}  // namespace slimpack::loader

namespace slimpack::loader::testing {

inline const Status& GetStatus(const Status& s) { return s; }
template <typename T>
const Status& GetStatus(const Result<T>& r) {
  return r.status();
}

MATCHER(IsOk, "is OK") {
  const Status& s = GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s.ToString();
  return s.ok();
}

MATCHER_P2(StatusIs, code, message_matcher,
           std::string("has code ") + StatusCodeName(code)) {
  const Status& s = GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  if (s.code() != code) return false;
  return ::testing::ExplainMatchResult(message_matcher, s.message(),
                                       result_listener);
}

}  // namespace slimpack::loader::testing

#endif  // SLIMPACK_TESTS_SHARD_LOADER_LOADER_MATCHERS_H_
