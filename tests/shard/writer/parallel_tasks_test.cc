// shard_writer::RunTasks when the system refuses threads (`--threads 1024`
// under a limit aborted before): the threads that started and the caller
// run every task once, and the reported error is still the lowest-index
// failure. Refusals come from support/threads.h's test hook, which fails a
// start through the same catch as pthread_create's EAGAIN.
#include "formats/shard/writer/parallel_tasks.h"

#include <atomic>
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

}  // namespace
}  // namespace slimpack::shard_writer
