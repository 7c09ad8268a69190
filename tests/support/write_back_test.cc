// support/write_back: a background flush's failure is what Finish returns
// (the final fsync may no longer see it), a file written through it holds
// its bytes, and a refused flush thread only costs the overlap.
#include "support/write_back.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "support/threads.h"

namespace slimpack::support {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// /dev/null accepts writes but not fdatasync (EINVAL): the flush started
// at 64 MiB fails on its thread, and Finish reports it.
TEST(WriteBackTest, FinishReportsTheFailureOfABackgroundFlush) {
  const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    WriteBack wb(fd);
    wb.Appended(8 * kMiB);  // written back, no flush yet
    EXPECT_EQ(wb.Finish(), 0);
    wb.Appended(64 * kMiB);
    EXPECT_EQ(wb.Finish(), EINVAL);
    EXPECT_EQ(wb.Finish(), EINVAL);  // kept
  }
  {
    // Below 64 MiB no flush runs, so nothing fails.
    WriteBack wb(fd);
    for (uint64_t size = kMiB; size < 64 * kMiB; size += kMiB) wb.Appended(size);
    EXPECT_EQ(wb.Finish(), 0);
  }
  {
    // A flush whose thread the system refuses never runs: nothing to report.
    LimitThreadStartsForTesting(0);
    WriteBack wb(fd);
    wb.Appended(64 * kMiB);
    EXPECT_EQ(wb.Finish(), 0);
    LimitThreadStartsForTesting(-1);
  }
  ::close(fd);
}

// A regular file appended through it in pieces, with flushes running
// beside the writes, holds exactly what was written.
TEST(WriteBackTest, AFileWrittenAlongsideFlushesHoldsItsBytes) {
  const std::string path = ::testing::TempDir() + "/write_back_test.bin";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> piece(kMiB);
  uint64_t size = 0;
  {
    WriteBack wb(fd);
    for (int i = 0; i < 140; ++i) {  // two flushes
      for (size_t k = 0; k < piece.size(); k += 4096) piece[k] = static_cast<uint8_t>(i + k);
      ASSERT_EQ(::write(fd, piece.data(), piece.size()), static_cast<ssize_t>(piece.size()));
      size += piece.size();
      wb.Appended(size);
    }
    EXPECT_EQ(wb.Finish(), 0);
  }
  ::close(fd);
  const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(in, 0);
  std::vector<uint8_t> back(kMiB);
  for (int i = 0; i < 140; ++i) {
    ASSERT_EQ(::read(in, back.data(), back.size()), static_cast<ssize_t>(back.size()));
    for (size_t k = 0; k < back.size(); k += 4096) {
      ASSERT_EQ(back[k], static_cast<uint8_t>(i + k)) << "MiB " << i << " byte " << k;
    }
  }
  uint8_t extra;
  EXPECT_EQ(::read(in, &extra, 1), 0);
  ::close(in);
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace slimpack::support
