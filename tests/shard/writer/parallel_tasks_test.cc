// shard_writer::RunTasks when the system refuses threads (`--threads 1024`
// under a limit aborted before): the threads that started and the caller
// run every task once, and the reported error is still the lowest-index
// failure. Refusals come from support/threads.h's test hook, which fails a
// start through the same catch as pthread_create's EAGAIN.
#include "formats/shard/writer/parallel_tasks.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/threads.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::shard_writer {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;

struct StartLimit {
  explicit StartLimit(int allowed) { support::LimitThreadStartsForTesting(allowed); }
  ~StartLimit() { support::LimitThreadStartsForTesting(-1); }
};

TEST(ParallelTasksTest, RefusedThreadsStillRunEveryTaskOnce) {
  for (int allowed : {0, 3}) {
    SCOPED_TRACE(std::to_string(allowed) + " thread starts allowed");
    StartLimit limit(allowed);
    std::vector<std::atomic<int>> runs(200);
    std::vector<std::function<absl::Status()>> tasks;
    for (size_t i = 0; i < runs.size(); ++i) {
      tasks.push_back([&runs, i] {
        runs[i].fetch_add(1);
        return absl::OkStatus();
      });
    }
    ASSERT_THAT(RunTasks(1024, tasks), IsOk());
    for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << "task " << i;
  }
}

TEST(ParallelTasksTest, RefusedThreadsReportTheLowestFailure) {
  StartLimit limit(0);  // the caller runs the tasks in order
  std::vector<std::function<absl::Status()>> tasks(
      8, [] { return absl::OkStatus(); });
  tasks[3] = [] { return absl::DataLossError("task 3"); };
  tasks[6] = [] { return absl::DataLossError("task 6"); };
  EXPECT_THAT(RunTasks(1024, tasks),
              StatusIs(absl::StatusCode::kDataLoss, ::testing::Eq("task 3")));
}

// A thread with no task left calls `help` while another still runs, until
// it finishes: the long task waits here until help has run twice, which it
// can only do if the idle thread keeps asking (false answers included).
TEST(ParallelTasksTest, AnIdleThreadHelpsUntilTheLastTaskEnds) {
  std::atomic<int> helped{0}, asked{0};
  std::atomic<bool> long_done{false};
  std::vector<std::function<absl::Status()>> tasks = {
      [&] {
        while (helped.load() < 2) std::this_thread::yield();
        long_done.store(true);
        return absl::OkStatus();
      },
      [] { return absl::OkStatus(); }};
  auto help = [&] {
    const int n = asked.fetch_add(1);
    if (n % 2 == 0) return false;  // nothing to offer now: asked again later
    helped.fetch_add(1);
    return true;
  };
  ASSERT_THAT(RunTasks(2, tasks, help), IsOk());
  EXPECT_GE(helped.load(), 2);
  EXPECT_TRUE(long_done.load());
}

}  // namespace
}  // namespace slimpack::shard_writer
