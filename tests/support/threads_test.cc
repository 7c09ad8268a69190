// support/threads: a thread the system refuses to start is not fatal. The
// calls of a refused thread run on the caller, each exactly once, so the
// result is the one all threads would have computed. Refusals come from the
// test hook (it throws the same std::system_error pthread_create's EAGAIN
// does) and, when not root, from a real RLIMIT_NPROC in a forked child.
#include "support/threads.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <numeric>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace slimpack::support {
namespace {

// Lifts the start limit however the test ends, so later tests start threads.
struct StartLimit {
  explicit StartLimit(int allowed) { LimitThreadStartsForTesting(allowed); }
  ~StartLimit() { LimitThreadStartsForTesting(-1); }
};

// Each t writes only its own slot, as the project's pools do.
std::vector<int64_t> Squares(int64_t n, int* threads_used) {
  std::vector<int64_t> out(static_cast<size_t>(n), -1);
  std::vector<std::atomic<int>> calls(static_cast<size_t>(n));
  *threads_used = RunOnThreads(n, [&](int64_t t) {
    out[static_cast<size_t>(t)] = t * t;
    calls[static_cast<size_t>(t)].fetch_add(1);
  });
  for (int64_t t = 0; t < n; ++t) {
    EXPECT_EQ(calls[static_cast<size_t>(t)].load(), 1) << "call " << t;
  }
  return out;
}

std::vector<int64_t> Expected(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) v[static_cast<size_t>(t)] = t * t;
  return v;
}

TEST(ThreadsTest, ThreadsOrCoresKeepsAPositiveCountAndResolvesTheRest) {
  EXPECT_EQ(ThreadsOrCores(3), 3);
  EXPECT_EQ(ThreadsOrCores(1), 1);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  for (int unset : {0, -2}) EXPECT_EQ(ThreadsOrCores(unset), cores > 0 ? cores : 1);
}

TEST(ThreadsTest, RefusedStartLeavesThreadsUnchangedAndDoesNotRun) {
  StartLimit limit(0);
  std::vector<std::thread> threads;
  bool ran = false;
  EXPECT_FALSE(TryStartThread(threads, [&ran] { ran = true; }));
  EXPECT_TRUE(threads.empty());
  EXPECT_FALSE(ran);
}

TEST(ThreadsTest, CallsOfRefusedThreadsRunOnTheCaller) {
  const int64_t n = 1024;
  for (int allowed : {0, 1, 5}) {
    StartLimit limit(allowed);
    int used = 0;
    EXPECT_EQ(Squares(n, &used), Expected(n)) << allowed << " starts allowed";
    EXPECT_EQ(used, allowed + 1);
  }
  int used = 0;
  EXPECT_EQ(Squares(8, &used), Expected(8));  // no limit: one thread per call
  EXPECT_EQ(used, 8);
}

}  // namespace
}  // namespace slimpack::support
