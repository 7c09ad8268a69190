// A minimal fork-join runner for the writer's independent jobs (one shard
// file, one carried file, one input digest each).
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_PARALLEL_TASKS_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_PARALLEL_TASKS_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"

namespace slimpack::shard_writer {

// Runs every task on up to `threads` threads (>= 1), starting them in
// vector order. After the first failure no new task starts. Returns the
// error of the failed task with the lowest index, so the reported error
// does not depend on timing when several fail.
absl::Status RunTasks(int threads,
                      const std::vector<std::function<absl::Status()>>& tasks);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_PARALLEL_TASKS_H_
