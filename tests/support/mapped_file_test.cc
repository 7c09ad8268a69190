// support/mapped_file: a FIFO planted where a weights file belongs is
// refused at once (it used to block in open() waiting for a writer), and a
// regular file maps with its bytes.
#include "support/mapped_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

std::string NewDir() {
  char tmpl[] = "/tmp/mapped_file_test.XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl), nullptr);
  return tmpl;
}

// As in small_file_test: a blocked open() cannot be cancelled, so a
// timeout ends the process with a message instead of hanging ctest.
absl::StatusOr<std::shared_ptr<MappedFile>> OpenWithDeadline(const std::string& path) {
  auto result = std::async(std::launch::async, [path] { return MappedFile::Open(path); });
  if (result.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    std::fprintf(stderr, "FATAL: MappedFile::Open(\"%s\") blocked for 10 s\n", path.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
  return result.get();
}

TEST(MappedFileTest, MapsARegularFile) {
  const std::string path = NewDir() + "/w.bin";
  std::ofstream(path, std::ios::binary) << "weights";
  auto f = OpenWithDeadline(path);
  ASSERT_THAT(f, IsOk());
  ASSERT_EQ((*f)->size(), 7u);
  EXPECT_EQ(std::memcmp((*f)->data(), "weights", 7), 0);
}

TEST(MappedFileTest, RefusesAFifoWithoutBlocking) {
  const std::string path = NewDir() + "/model.safetensors";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_THAT(OpenWithDeadline(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                               HasSubstr(path + ": not a regular file")));
}

}  // namespace
}  // namespace slimpack
