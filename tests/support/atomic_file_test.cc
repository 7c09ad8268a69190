// support/atomic_file: the destination holds its old contents (or nothing)
// until Commit, the temporary is removed on every failure, and a process
// that dies mid-write leaves the destination untouched.
#include "support/atomic_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/threads.h"
#include "tests/testing/status_matchers.h"

namespace slimpack {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/atomic_file_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }
  std::vector<std::string> List() const {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir_.c_str());
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void Put(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  std::string dir_;
};

// Past 64 MiB a flush runs on a thread of its own while writing goes on
// (and, when no thread starts, not at all): either way the committed file
// holds every byte in order, the temporary is gone, and a file abandoned
// while a flush may still run is removed without a trace.
TEST_F(AtomicFileTest, LargeFilesFlushedWhileWritingCommitTheSameBytes) {
  constexpr int kMiB = 1 << 20, kPieces = 80;  // one flush, then the rest
  std::vector<char> piece(kMiB);
  for (int allowed : {-1, 0}) {
    support::LimitThreadStartsForTesting(allowed);
    const std::string path = File(allowed < 0 ? "flushed.bin" : "unflushed.bin");
    auto file = AtomicFile::Create(path);
    ASSERT_THAT(file, IsOk());
    for (int i = 0; i < kPieces; ++i) {
      std::fill(piece.begin(), piece.end(), static_cast<char>('A' + i % 26));
      ASSERT_THAT((*file)->Write(piece.data(), piece.size()), IsOk());
    }
    ASSERT_THAT((*file)->Commit(), IsOk());
    support::LimitThreadStartsForTesting(-1);
    const std::string back = Read(path);
    ASSERT_EQ(back.size(), static_cast<size_t>(kPieces) * kMiB);
    for (int i = 0; i < kPieces; ++i) {
      const size_t at = static_cast<size_t>(i) * kMiB;
      ASSERT_EQ(back.compare(at, kMiB, std::string(kMiB, static_cast<char>('A' + i % 26))), 0)
          << "piece " << i;
    }
  }
  {
    auto abandoned = AtomicFile::Create(File("abandoned.bin"));
    ASSERT_THAT(abandoned, IsOk());
    for (int i = 0; i < 70; ++i) ASSERT_THAT((*abandoned)->Write(piece.data(), kMiB), IsOk());
  }
  EXPECT_THAT(List(), ElementsAre("flushed.bin", "unflushed.bin"));
}

TEST_F(AtomicFileTest, DestinationIsUntouchedUntilCommit) {
  Put(File("m.bin"), "old");
  auto file = AtomicFile::Create(File("m.bin"));
  ASSERT_THAT(file, IsOk());
  ASSERT_THAT((*file)->Write("new contents", 12), IsOk());
  ASSERT_THAT((*file)->WriteZeros(3), IsOk());
  EXPECT_EQ((*file)->size(), 15u);
  // Before Commit: old bytes under the final name, the new ones in a hidden
  // temporary beside it.
  EXPECT_EQ(Read(File("m.bin")), "old");
  std::vector<std::string> names = List();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_THAT(names[0], StartsWith(".m.bin.tmp-"));
  EXPECT_EQ(File(names[0]), (*file)->temp_path());

  ASSERT_THAT((*file)->Commit(), IsOk());
  EXPECT_EQ(Read(File("m.bin")), std::string("new contents\0\0\0", 15));
  EXPECT_THAT(List(), ElementsAre("m.bin"));
  EXPECT_THAT((*file)->Commit(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                          HasSubstr("m.bin")));
}

// A header field known only after the data behind it is written over its
// placeholder; the append position stays at the end.
TEST_F(AtomicFileTest, WriteAtOverwritesWrittenBytesOnly) {
  auto file = AtomicFile::Create(File("h.bin"));
  ASSERT_THAT(file, IsOk());
  ASSERT_THAT((*file)->Write("count=??;data", 13), IsOk());
  ASSERT_THAT((*file)->WriteAt(6, "42", 2), IsOk());
  EXPECT_EQ((*file)->size(), 13u);
  ASSERT_THAT((*file)->Write("!", 1), IsOk());
  EXPECT_THAT((*file)->WriteAt(12, "xyz", 3),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("h.bin"), HasSubstr("3 bytes at offset 12 past the 14"))));
  EXPECT_THAT((*file)->WriteAt(15, "", 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("offset 15")));
  ASSERT_THAT((*file)->WriteAt(14, "", 0), IsOk());
  ASSERT_THAT((*file)->Commit(), IsOk());
  EXPECT_EQ(Read(File("h.bin")), "count=42;data!");
}

TEST_F(AtomicFileTest, AbandonedFileLeavesNothing) {
  {
    auto file = AtomicFile::Create(File("new.bin"));
    ASSERT_THAT(file, IsOk());
    ASSERT_THAT((*file)->Write("partial", 7), IsOk());
  }
  EXPECT_THAT(List(), IsEmpty());
}

TEST_F(AtomicFileTest, FailedRenameRemovesTheTemporary) {
  // The final name is a non-empty directory, so rename(2) fails after the
  // data was written and fsynced.
  ASSERT_EQ(::mkdir(File("m.bin").c_str(), 0755), 0);
  Put(File("m.bin/keep"), "x");
  {
    auto file = AtomicFile::Create(File("m.bin"));
    ASSERT_THAT(file, IsOk());
    ASSERT_THAT((*file)->Write("data", 4), IsOk());
    EXPECT_THAT((*file)->Commit(),
                StatusIs(absl::StatusCode::kUnknown, HasSubstr(File("m.bin") + ": rename")));
  }
  EXPECT_THAT(List(), ElementsAre("m.bin"));
  EXPECT_EQ(Read(File("m.bin/keep")), "x");
}

TEST_F(AtomicFileTest, ProcessKilledMidWriteLeavesTheOldFile) {
  Put(File("m.bin"), "old");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto file = AtomicFile::Create(File("m.bin"));
    if (!file.ok() || !(*file)->Write("half of the new", 15).ok()) ::_exit(1);
    ::_exit(0);  // dies without Commit and without running destructors
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(Read(File("m.bin")), "old");
  // Only a hidden temporary is left behind, never a truncated m.bin.
  std::vector<std::string> names = List();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_THAT(names[0], StartsWith(".m.bin.tmp-"));
  EXPECT_EQ(names[1], "m.bin");
}

TEST_F(AtomicFileTest, MissingDirectoryIsNotFoundNamingThePath) {
  EXPECT_THAT(AtomicFile::Create(File("no/such/m.bin")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(File("no/such/m.bin"))));
  EXPECT_THAT(WriteFileAtomically(File("no/such/m.bin"), {"x"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(File("no/such/m.bin"))));
}

TEST_F(AtomicFileTest, WriteFileAtomicallyReplacesWithTheConcatenation) {
  Put(File("a.txt"), "previous, longer contents");
  ASSERT_THAT(WriteFileAtomically(File("a.txt"), {"ab", "", "cde"}), IsOk());
  EXPECT_EQ(Read(File("a.txt")), "abcde");
  EXPECT_THAT(List(), ElementsAre("a.txt"));
  struct stat st;
  ASSERT_EQ(::stat(File("a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644 & ~[] {
    mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }());
}

TEST(ErrnoToStatusTest, MapsToTheMostSpecificCode) {
  EXPECT_THAT(ErrnoToStatus(ENOENT, "f"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("f: ")));
  EXPECT_THAT(ErrnoToStatus(EROFS, "f"), StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("f")));
  EXPECT_THAT(ErrnoToStatus(ENOSPC, "f"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("No space left")));
  EXPECT_THAT(ErrnoToStatus(EEXIST, "f"), StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("f")));
  EXPECT_THAT(ErrnoToStatus(EISDIR, "f"), StatusIs(absl::StatusCode::kUnknown, HasSubstr("f")));
}

TEST(WriteFullyTest, NamesPathSizeAndOffsetOnFailure) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);  // writing to a pipe with no reader: EPIPE
  std::signal(SIGPIPE, SIG_IGN);
  EXPECT_THAT(WriteFully(fds[1], "abcd", 4, "out/x.bin", 100),
              StatusIs(absl::StatusCode::kUnknown,
                       HasSubstr("out/x.bin: writing 4 bytes at offset 100")));
  ::close(fds[1]);
}

}  // namespace
}  // namespace slimpack
