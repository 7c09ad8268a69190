// Starting threads without letting a refusal escape. std::thread throws
// std::system_error when the system will not start one more thread
// (RLIMIT_NPROC, cgroup pids.max, an address-space limit with no room for
// another stack), which would abort `--threads 1024` under a memory limit.
// Every worker pool of ours starts its threads here and hands the work of a
// thread that did not start to the ones that did, at least the calling
// thread; work is always split the same way, so a refused thread costs
// speed, never a different result.
#ifndef SLIMPACK_SUPPORT_THREADS_H_
#define SLIMPACK_SUPPORT_THREADS_H_

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace slimpack::support {

// Starts `fn` on a new thread appended to `threads`. Returns false, with
// `threads` unchanged and `fn` not run, when the thread cannot be created.
bool TryStartThread(std::vector<std::thread>& threads, std::function<void()> fn);

// Calls work(t) exactly once for every t in [0, n) and returns when all
// calls are done: work(0) on the calling thread, each other t on a thread of
// its own where one starts; after the first refusal no more threads are
// tried and the remaining t run on the calling thread in ascending order.
// Returns the number of threads that ran calls, the caller included.
int RunOnThreads(int64_t n, const std::function<void(int64_t)>& work);

// A --threads value resolved: `threads` when positive, else one per core
// (at least 1, also where the system cannot tell the core count).
int ThreadsOrCores(int threads);

// Test only (thread creation cannot be made to fail for root, whom
// RLIMIT_NPROC does not bind): once `allowed` more threads have started,
// TryStartThread refuses every start through the same path as a refusal by
// the system. A negative value lifts the limit (the default).
void LimitThreadStartsForTesting(int allowed);

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_THREADS_H_
