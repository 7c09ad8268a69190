// support/in_order_sink: pieces produced out of order by several threads
// reach the sink in order, a blocked sink holds the producers to the
// backlog (the memory bound the streamed GGUF and ggml-block writers rely
// on), and an error from the sink or a producer stops everyone.
#include "support/in_order_sink.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "support/threads.h"

namespace slimpack::support {
namespace {

using std::chrono::milliseconds;

// A one-shot gate the sink waits on.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Piece c is the single byte c, so the sink's bytes show the order.
std::vector<uint8_t> Piece(int64_t c) { return {static_cast<uint8_t>(c)}; }

// Runs `threads` producers over `pieces` pieces, taking them in turn as
// the encoders do. `started` counts pieces past WaitForRoom.
absl::Status Produce(InOrderSink& in_order, int threads, int64_t pieces,
                     std::atomic<int64_t>& started, std::atomic<int64_t>& handed,
                     std::atomic<int64_t>& max_outstanding) {
  std::atomic<int64_t> next{0};
  std::mutex mu;
  absl::Status first;
  RunOnThreads(threads, [&](int64_t) {
    for (int64_t c = next++; c < pieces; c = next++) {
      if (!in_order.WaitForRoom(c)) return;
      const int64_t outstanding = ++started - handed.load();
      int64_t seen = max_outstanding.load();
      while (outstanding > seen && !max_outstanding.compare_exchange_weak(seen, outstanding)) {
      }
      if (absl::Status s = in_order.Deposit(c, Piece(c)); !s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) first = s;
        in_order.Stop();
        return;
      }
    }
  });
  return first;
}

bool WaitFor(const std::function<bool()>& cond) {
  for (int i = 0; i < 10000 && !cond(); ++i) std::this_thread::sleep_for(milliseconds(1));
  return cond();
}

TEST(InOrderSinkTest, BlockedSinkHoldsProducersToTheBacklog) {
  constexpr int kThreads = 4;
  constexpr int64_t kBacklog = 3, kPieces = 40;
  Gate gate;
  std::atomic<bool> in_sink{false};
  std::atomic<int64_t> started{0}, handed{0}, max_outstanding{0};
  std::vector<uint8_t> got;
  ByteSink sink = [&](const uint8_t* data, uint64_t size) {
    if (got.empty()) {
      in_sink = true;
      gate.Wait();
    }
    got.insert(got.end(), data, data + size);
    ++handed;
    return absl::OkStatus();
  };
  InOrderSink in_order(sink, kBacklog);
  absl::Status result;
  std::thread producers(
      [&] { result = Produce(in_order, kThreads, kPieces, started, handed, max_outstanding); });
  // Piece 0 is inside the sink: pieces 1..kBacklog may be produced, no more,
  // however many threads are free.
  ASSERT_TRUE(WaitFor([&] { return in_sink.load() && started.load() == kBacklog + 1; }))
      << "started " << started.load();
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(started.load(), kBacklog + 1);
  EXPECT_EQ(in_order.emitted(), 1);
  gate.Open();
  producers.join();
  ASSERT_TRUE(result.ok()) << result;
  EXPECT_LE(max_outstanding.load(), kBacklog + 1);
  EXPECT_EQ(in_order.emitted(), kPieces);
  std::vector<uint8_t> want;
  for (int64_t c = 0; c < kPieces; ++c) want.push_back(static_cast<uint8_t>(c));
  EXPECT_EQ(got, want);
}

TEST(InOrderSinkTest, OutOfOrderDepositsComeOutInOrder) {
  std::vector<uint8_t> got;
  ByteSink sink = [&](const uint8_t* data, uint64_t size) {
    got.insert(got.end(), data, data + size);
    return absl::OkStatus();
  };
  InOrderSink in_order(sink, 8);
  for (int64_t c : {3, 1, 2}) ASSERT_TRUE(in_order.Deposit(c, Piece(c)).ok());
  EXPECT_TRUE(got.empty());  // piece 0 is due
  EXPECT_EQ(in_order.emitted(), 0);
  ASSERT_TRUE(in_order.Deposit(0, Piece(0)).ok());
  EXPECT_EQ(got, (std::vector<uint8_t>{0, 1, 2, 3}));
  EXPECT_EQ(in_order.emitted(), 4);
}

TEST(InOrderSinkTest, SinkErrorStopsEveryProducer) {
  std::vector<uint8_t> got;
  ByteSink sink = [&](const uint8_t* data, uint64_t size) {
    if (data[0] == 5) return absl::DataLossError("disk full at piece 5");
    got.insert(got.end(), data, data + size);
    return absl::OkStatus();
  };
  InOrderSink in_order(sink, 2);
  std::atomic<int64_t> started{0}, handed{0}, max_outstanding{0};
  absl::Status s = Produce(in_order, 3, 100, started, handed, max_outstanding);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(got, (std::vector<uint8_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(in_order.emitted(), 6);  // piece 5 reached the sink
  // Stopped: no producer may start, later pieces are dropped silently.
  EXPECT_FALSE(in_order.WaitForRoom(6));
  EXPECT_TRUE(in_order.Deposit(6, Piece(6)).ok());
  EXPECT_EQ(got.size(), 5u);
  EXPECT_LE(started.load(), 6 + 2);
}

TEST(InOrderSinkTest, ProducerStopWakesWaitingProducers) {
  ByteSink sink = [](const uint8_t*, uint64_t) { return absl::OkStatus(); };
  InOrderSink in_order(sink, 1);
  std::atomic<bool> woke{false};
  // Piece 1 must wait for piece 0, which never comes: Stop releases it.
  std::thread waiter([&] { woke = !in_order.WaitForRoom(1); });
  std::this_thread::sleep_for(milliseconds(20));
  in_order.Stop();
  waiter.join();
  EXPECT_TRUE(woke.load());
  EXPECT_EQ(in_order.emitted(), 0);
}

}  // namespace
}  // namespace slimpack::support
