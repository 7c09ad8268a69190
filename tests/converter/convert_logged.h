// What the deferred-conversion tests share: one `slimpack convert` as a
// library call, its log lines captured.
#ifndef SLIMPACK_TESTS_CONVERTER_CONVERT_LOGGED_H_
#define SLIMPACK_TESTS_CONVERTER_CONVERT_LOGGED_H_

#include <string>
#include <utility>
#include <vector>

#include "converter/convert.h"
#include "converter/convert_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::converter::testing {

// Converts with `flags` (input, output and the rest set by the caller),
// quantizing or sparsifying as the shards are written when
// `while_writing`, and returns the stages' log lines. Failures are
// reported under `name`; an empty list then.
inline std::vector<std::string> ConvertLogged(const ConvertFlags& flags, bool while_writing,
                                              const std::string& name) {
  auto request = BuildConvertRequest(flags);
  EXPECT_THAT(request, ::slimpack::testing::IsOk()) << name;
  if (!request.ok()) return {};
  std::vector<std::string> lines;
  request->stages.log = [&lines](const std::string& l) { lines.push_back(l); };
  request->quantize_while_writing = while_writing;
  EXPECT_THAT(Convert(*std::move(request), {}), ::slimpack::testing::IsOk()) << name;
  return lines;
}

}  // namespace slimpack::converter::testing

#endif  // SLIMPACK_TESTS_CONVERTER_CONVERT_LOGGED_H_
