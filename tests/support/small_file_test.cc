// support/small_file: whole-file reads with a size cap, and refusal (never
// a hang) of anything that is not a regular file, FIFOs included: a recipe
// or config.json path naming a named pipe must fail at once.
#include "support/small_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

class SmallFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/small_file_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

// Runs ReadSmallFile on another thread. A regression that blocks in open()
// would hang the thread forever, and a std::future from std::async joins it
// on destruction, so on timeout the process reports and exits at once
// (ctest runs each test in its own process, so only this test fails).
absl::StatusOr<std::string> ReadWithDeadline(const std::string& path) {
  auto result = std::async(std::launch::async, [path] {
    return support::ReadSmallFile(path, support::kMaxSideFileBytes);
  });
  if (result.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    std::fprintf(stderr,
                 "FATAL: support::ReadSmallFile(\"%s\") did not return within "
                 "10 s (blocked opening a FIFO?)\n",
                 path.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
  return result.get();
}

TEST_F(SmallFileTest, ReadsRegularFile) {
  {
    std::ofstream out(File("config.json"), std::ios::binary);
    out << "{\"a\": 1}";
  }
  auto text = ReadWithDeadline(File("config.json"));
  ASSERT_THAT(text, IsOk());
  EXPECT_EQ(*text, "{\"a\": 1}");
}

TEST_F(SmallFileTest, RefusesFifoWithoutBlocking) {
  const std::string path = File("recipe.json");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_THAT(ReadWithDeadline(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(path + ": is a FIFO, not a regular file")));
}

TEST_F(SmallFileTest, RefusesDirectory) {
  const std::string path = File("config.json");
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  EXPECT_THAT(ReadWithDeadline(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(path + ": is a directory, not a regular file")));
}

TEST_F(SmallFileTest, MissingFileIsNotFound) {
  EXPECT_THAT(ReadWithDeadline(File("absent.json")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent.json")));
}

TEST_F(SmallFileTest, RefusesFileOverTheCap) {
  {
    std::ofstream out(File("big.json"), std::ios::binary);
    out << std::string(100, ' ');
  }
  EXPECT_THAT(support::ReadSmallFile(File("big.json"), 99),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("file is 100 bytes, over the 99-byte limit")));
}

}  // namespace
}  // namespace slimpack
