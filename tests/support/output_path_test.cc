// support/output_path: the output rules every writing command shares
// (issue 16 items 9 and 11): a real writability probe, input/output
// identity by device and inode, "replace only what we wrote, or --force",
// and the JSON "format" recogniser.
#include "support/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::support {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

class OutputPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/output_path_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    ::chmod(dir_.c_str(), 0755);
    const std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Recognises files that start with "ours".
  static OutputKind Kind() {
    return {"a test output (starting with \"ours\")",
            [](const std::string& p) { return Read(p).rfind("ours", 0) == 0; }};
  }
  std::string dir_;
};

TEST_F(OutputPathTest, ParentMustExistBeADirectoryAndAcceptAFile) {
  EXPECT_THAT(CheckParentWritable(File("missing/out.json")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("parent directory '" + File("missing") + "' does not exist")));
  Write(File("plain"), "x");
  EXPECT_THAT(CheckParentWritable(File("plain/out.json")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not a directory")));
  EXPECT_THAT(CheckParentWritable(File("out.json")), IsOk());
  // access(2) says yes to root on /proc; the probe does not.
  EXPECT_THAT(CheckParentWritable("/proc/x"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       AllOf(HasSubstr("/proc/x"), HasSubstr("directory '/proc' is not writable"))));
  if (::geteuid() != 0) {  // root ignores permission bits
    ASSERT_EQ(::chmod(dir_.c_str(), 0555), 0);
    EXPECT_THAT(CheckParentWritable(File("out.json")),
                StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("is not writable")));
    ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  }
  // The probe leaves nothing behind.
  EXPECT_EQ(std::system(("test -z \"$(ls -A '" + dir_ + "' | grep -v '^plain$')\"").c_str()), 0);
}

TEST_F(OutputPathTest, FreeSpaceOnAFileSystemWithoutStorageSaysNotWritable) {
  EXPECT_THAT(CheckFreeSpace("/proc/x", 4096),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       AllOf(HasSubstr("'/proc'"), HasSubstr("not writable"))));
  EXPECT_THAT(CheckFreeSpace(File("out"), 1), IsOk());
}

TEST_F(OutputPathTest, ExistingFileIsReplacedOnlyIfOursOrForced) {
  const std::string out = File("out.json");
  EXPECT_THAT(PreflightOutputFile(out, false, Kind()), IsOk());
  EXPECT_EQ(*PreflightOutputFile(out, false, Kind()), ExistingOutput::kAbsent);
  Write(out, "ours, from an earlier run");
  EXPECT_EQ(*PreflightOutputFile(out, false, Kind()), ExistingOutput::kOurs);
  Write(out, "the user's notes");
  EXPECT_THAT(PreflightOutputFile(out, false, Kind()),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       AllOf(HasSubstr(out), HasSubstr("is not a test output"),
                             HasSubstr("--force"))));
  EXPECT_EQ(Read(out), "the user's notes");
  auto forced = PreflightOutputFile(out, true, Kind());
  ASSERT_THAT(forced, IsOk());
  EXPECT_EQ(*forced, ExistingOutput::kReplaced);
}

TEST_F(OutputPathTest, NeverReplacesDirectoriesLinksOrSpecialFiles) {
  ASSERT_EQ(::mkdir(File("d").c_str(), 0755), 0);
  EXPECT_THAT(PreflightOutputFile(File("d"), true, Kind()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a directory")));
  Write(File("real"), "ours");
  ASSERT_EQ(::symlink(File("real").c_str(), File("link").c_str()), 0);
  EXPECT_THAT(PreflightOutputFile(File("link"), true, Kind()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("symbolic link")));
  ASSERT_EQ(::mkfifo(File("fifo").c_str(), 0644), 0);
  EXPECT_THAT(PreflightOutputFile(File("fifo"), true, Kind()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a FIFO")));
  EXPECT_THAT(PreflightOutputFile("/dev/null", true, Kind()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("character device")));
  EXPECT_THAT(PreflightOutputFile("", true, Kind()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name a file")));
  EXPECT_THAT(PreflightOutputFile(File("sub/"), true, Kind()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name a file")));
}

TEST_F(OutputPathTest, OutputThatIsAnInputIsFoundByInodeNotByName) {
  Write(File("in.npz"), "data");
  ASSERT_EQ(::mkdir(File("sub").c_str(), 0755), 0);
  ASSERT_EQ(::link(File("in.npz").c_str(), File("hard.npz").c_str()), 0);
  ASSERT_EQ(::symlink(File("in.npz").c_str(), File("soft.npz").c_str()), 0);
  for (const std::string& out :
       {File("in.npz"), File("hard.npz"), File("soft.npz"), File("sub/../in.npz")}) {
    SCOPED_TRACE(out);
    EXPECT_THAT(CheckOutputIsNotAnInput({File("other"), File("in.npz")}, out, "--output"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("--output '" + out + "' is the input '" +
                                         File("in.npz") + "'"),
                               HasSubstr("same file"))));
  }
  EXPECT_THAT(CheckOutputIsNotAnInput({File("in.npz")}, File("new.npz")), IsOk());
  Write(File("other.npz"), "x");
  EXPECT_THAT(CheckOutputIsNotAnInput({File("in.npz"), ""}, File("other.npz")), IsOk());
  // A directory output that is an input directory.
  EXPECT_THAT(CheckOutputIsNotAnInput({File("sub")}, dir_ + "/./sub/"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("same directory")));
  // Replaced as a whole, an output directory must not hold an input.
  EXPECT_THAT(CheckInputsOutsideOutput({File("sub/x")}, File("sub")), IsOk());  // absent
  Write(File("sub/x"), "x");
  EXPECT_THAT(CheckInputsOutsideOutput({File("sub/x")}, File("sub")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is inside the output")));
}

TEST_F(OutputPathTest, JsonFormatIsReadFromTheTopLevelOnly) {
  struct Case {
    const char* text;
    bool ours;
  } cases[] = {
      {R"({"format": "slimpack-x", "version": 1})", true},
      {R"({"dataset": {"files": [{"format": "no"}]}, "format": "slimpack-x"})", true},
      {R"({"format": "slimpack-x", "rest": )", true},  // decided before the break
      {R"({"format": "other"})", false},
      {R"({"inner": {"format": "slimpack-x"}})", false},
      {R"({"format": ["slimpack-x"]})", false},
      {R"(["slimpack-x"])", false},
      {R"("slimpack-x")", false},
      {"not json at all", false},
      {"", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Write(File("t.json"), c.text);
    EXPECT_EQ(JsonFileHasFormat(File("t.json"), "slimpack-x"), c.ours);
  }
  // A key deep in a large file is found without reading the rest.
  std::string big = R"({"format": "slimpack-x", "data": ")" + std::string(3 << 20, 'a') + "\"}";
  Write(File("big.json"), big);
  EXPECT_TRUE(JsonFileHasFormat(File("big.json"), "slimpack-x"));
  EXPECT_FALSE(JsonFileHasFormat(File("missing.json"), "slimpack-x"));
  ASSERT_EQ(::mkfifo(File("fifo.json").c_str(), 0644), 0);
  EXPECT_FALSE(JsonFileHasFormat(File("fifo.json"), "slimpack-x"));  // and does not hang
}

}  // namespace
}  // namespace slimpack::support
