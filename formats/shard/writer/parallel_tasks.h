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
//
// `help`, when set, is called by a thread that finds no task left while
// others still run, again and again until they finish: it does a piece of
// their work ahead (true) or has none to offer now (false: the thread waits
// a little before asking again).
absl::Status RunTasks(int threads,
                      const std::vector<std::function<absl::Status()>>& tasks,
                      const std::function<bool()>& help = nullptr);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_PARALLEL_TASKS_H_
