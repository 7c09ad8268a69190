#include "formats/shard/writer/parallel_tasks.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "support/threads.h"

namespace slimpack::shard_writer {

absl::Status RunTasks(int threads,
                      const std::vector<std::function<absl::Status()>>& tasks,
                      const std::function<bool()>& help) {
  std::vector<absl::Status> results(tasks.size());
  std::atomic<size_t> next{0};
  std::atomic<size_t> finished{0};
  std::atomic<bool> failed{false};
  auto worker = [&]() {
    for (;;) {
      if (failed.load()) return;
      const size_t i = next.fetch_add(1);
      if (i >= tasks.size()) break;
      results[i] = tasks[i]();
      if (!results[i].ok()) failed.store(true);
      finished.fetch_add(1);
    }
    while (help && !failed.load() && finished.load() < tasks.size()) {
      if (!help()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  };
  const size_t n = std::min<size_t>(std::max(threads, 1), tasks.size());
  // Workers pull tasks, so fewer threads (the system may refuse some:
  // support/threads.h) only take longer; the caller is always one.
  std::vector<std::thread> pool;
  for (size_t i = 1; i < n; ++i) {
    if (!support::TryStartThread(pool, worker)) break;
  }
  worker();
  for (auto& t : pool) t.join();
  for (const auto& s : results) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace slimpack::shard_writer
