#include "runtime/thread_pool.h"

#include "support/threads.h"

namespace slimpack::runtime {

ThreadPool::ThreadPool(int num_threads) {
  // A thread the system refuses (--threads 1024 under a process or memory
  // limit) is not an error: the pool runs with the workers that started,
  // down to the caller alone. Tasks do not depend on the thread count, so
  // results stay the same; after one refusal the rest would fail too.
  for (int i = 1; i < num_threads; ++i) {
    if (!support::TryStartThread(workers_, [this] { WorkerLoop(); })) break;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::RunTasks() {
  int64_t done = 0;
  for (;;) {
    int64_t i = next_task_.fetch_add(1);
    if (i >= num_tasks_) break;
    (*fn_)(i);
    ++done;
  }
  if (done > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_done_ += done;
    if (tasks_done_ == num_tasks_) done_.notify_all();
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      // fn_ is null between loops: a worker that wakes late must not join
      // a loop that has already finished.
      wake_.wait(lock, [&] {
        return stop_ || (generation_ != seen && fn_ != nullptr);
      });
      if (stop_) return;
      seen = generation_;
      ++active_;
    }
    RunTasks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --active_;
    }
    done_.notify_all();
  }
}

void ThreadPool::ParallelFor(int64_t n,
                             const std::function<void(int64_t)>& fn) {
  std::unique_lock<std::mutex> run_lock(run_mu_, std::try_to_lock);
  if (workers_.empty() || n <= 1 || !run_lock.owns_lock()) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    num_tasks_ = n;
    next_task_.store(0);
    tasks_done_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  RunTasks();
  std::unique_lock<std::mutex> lock(mu_);
  // Wait for the tasks and for every worker that joined this loop, so the
  // next loop can reset the shared fields safely.
  done_.wait(lock, [&] { return tasks_done_ == num_tasks_ && active_ == 0; });
  fn_ = nullptr;
}

void ParallelFor(ThreadPool* pool, int64_t n,
                 const std::function<void(int64_t)>& fn) {
  if (pool != nullptr) {
    pool->ParallelFor(n, fn);
    return;
  }
  for (int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace slimpack::runtime
