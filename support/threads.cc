#include "support/threads.h"

#include <algorithm>
#include <atomic>
#include <new>
#include <system_error>
#include <utility>

namespace slimpack::support {
namespace {

// Threads TryStartThread may still start; negative: no limit (test hook).
std::atomic<int> g_starts_left{-1};

// True when the test hook refuses this start; otherwise takes one start
// from a set limit.
bool RefusedForTesting() {
  int left = g_starts_left.load();
  while (left >= 0) {
    if (left == 0) return true;
    if (g_starts_left.compare_exchange_weak(left, left - 1)) return false;
  }
  return false;
}

}  // namespace

bool TryStartThread(std::vector<std::thread>& threads, std::function<void()> fn) {
  try {
    if (RefusedForTesting()) {
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                              "thread start refused (LimitThreadStartsForTesting)");
    }
    // pthread_create failing (EAGAIN) is a std::system_error; allocating
    // the thread's state or growing `threads` can be std::bad_alloc. In
    // both cases no thread was created, so nothing needs joining.
    threads.emplace_back(std::move(fn));
    return true;
  } catch (const std::system_error&) {
    return false;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

int ThreadsOrCores(int threads) {
  return threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int RunOnThreads(int64_t n, const std::function<void(int64_t)>& work) {
  if (n <= 0) return 1;
  std::vector<std::thread> threads;
  int64_t t = 1;
  for (; t < n; ++t) {
    if (!TryStartThread(threads, [&work, t] { work(t); })) break;
  }
  work(0);
  // Calls whose thread did not start: each is independent of which thread
  // runs it, so running them here gives the same result.
  for (; t < n; ++t) work(t);
  for (std::thread& th : threads) th.join();
  return static_cast<int>(threads.size()) + 1;
}

void LimitThreadStartsForTesting(int allowed) { g_starts_left.store(allowed < 0 ? -1 : allowed); }

}  // namespace slimpack::support
