#include "runtime/thread_pool.h"

#include <chrono>

#include "support/threads.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace slimpack::runtime {
namespace {

// How long a worker keeps polling for the next loop, and the caller for the
// workers to finish, before sleeping on a condition variable. A model runs
// dozens of ParallelFor loops of tens of microseconds each, separated by
// short single-threaded ops; a futex sleep and wake per loop cost about as
// much as the work (MobileNet ran slower on 2 threads than on 1). ONNX
// Runtime's pool spins for the same reason. Which thread runs which task
// does not change any result: tasks are fixed whatever the timing.
constexpr std::chrono::microseconds kSpinFor{200};

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Polls `ready` until it returns true or kSpinFor has passed; returns its
// last answer. The clock is read once per 64 polls.
template <typename Ready>
bool SpinUntil(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinFor;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  // More threads than cores: a spinning thread would take the core from
  // the one doing the work, so then every wait sleeps at once. (Set before
  // the workers start, which read it.)
  const unsigned cores = std::thread::hardware_concurrency();
  spin_ = cores != 0 && num_threads > 0 && static_cast<unsigned>(num_threads) <= cores;
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
    stop_.store(true);
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
    tasks_done_.store(tasks_done_.load() + done);
    if (tasks_done_.load() == num_tasks_) done_.notify_all();
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    // Poll first (the next loop usually starts within microseconds); the
    // decision to join is still made under mu_ below.
    if (spin_) SpinUntil([&] { return stop_.load() || generation_.load() != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      // fn_ is null between loops: a worker that wakes late must not join
      // a loop that has already finished.
      wake_.wait(lock, [&] {
        return stop_.load() || (generation_.load() != seen && fn_ != nullptr);
      });
      if (stop_.load()) return;
      seen = generation_.load();
      active_.store(active_.load() + 1);
    }
    RunTasks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      active_.store(active_.load() - 1);
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
    tasks_done_.store(0);
    generation_.store(generation_.load() + 1);
  }
  wake_.notify_all();
  RunTasks();
  // Wait for the tasks and for every worker that joined this loop, so the
  // next loop can reset the shared fields safely: polled, then confirmed
  // (or slept on) under mu_.
  auto finished = [&] { return tasks_done_.load() == num_tasks_ && active_.load() == 0; };
  if (spin_) SpinUntil(finished);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, finished);
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
