// A fixed pool of worker threads for data-parallel loops. Work is always
// split into the same tasks whatever the thread count, so results do not
// depend on how many threads run them.
#ifndef SLIMPACK_RUNTIME_THREAD_POOL_H_
#define SLIMPACK_RUNTIME_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace slimpack::runtime {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread; 1 means no workers. Workers
  // the system refuses to start are left out (support/threads.h), so the
  // pool may run fewer threads than asked for, never fewer than one.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads that run tasks: the workers that started, plus the caller.
  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(i) for every i in [0, n) and returns when all calls are done.
  // A call made while another ParallelFor runs (nested, or from another
  // thread) runs its tasks inline on the calling thread.
  void ParallelFor(int64_t n, const std::function<void(int64_t)>& fn);

 private:
  void WorkerLoop();
  void RunTasks();

  std::vector<std::thread> workers_;
  std::mutex run_mu_;  // held by the one ParallelFor using the workers
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t num_tasks_ = 0;
  std::atomic<int64_t> next_task_{0};
  // Written under mu_ (the condition variables' predicates read them
  // there); atomic so that the spin before a wait may read them without it.
  std::atomic<int64_t> tasks_done_{0};
  std::atomic<int> active_{0};  // workers inside RunTasks
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  bool spin_ = false;  // poll before waiting (no more threads than cores)
};

// Runs on `pool` if there is one, else inline.
void ParallelFor(ThreadPool* pool, int64_t n,
                 const std::function<void(int64_t)>& fn);

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_THREAD_POOL_H_
