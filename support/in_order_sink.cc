#include "support/in_order_sink.h"

#include <utility>

namespace slimpack::support {

bool InOrderSink::WaitForRoom(int64_t c) {
  std::unique_lock<std::mutex> lock(mu_);
  room_.wait(lock, [&] { return failed_ || c < next_ + backlog_; });
  return !failed_;
}

absl::Status InOrderSink::Deposit(int64_t c, std::vector<uint8_t> bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  if (failed_) return absl::OkStatus();  // the first error is already reported
  ready_.emplace(c, std::move(bytes));
  if (emitting_) return absl::OkStatus();  // that thread takes this one too
  emitting_ = true;
  for (auto it = ready_.find(next_); it != ready_.end(); it = ready_.find(next_)) {
    std::vector<uint8_t> piece = std::move(it->second);
    ready_.erase(it);
    ++next_;
    room_.notify_all();
    lock.unlock();
    absl::Status s = sink_(piece.data(), piece.size());
    lock.lock();
    if (!s.ok()) {
      emitting_ = false;
      StopLocked();
      return s;
    }
  }
  emitting_ = false;
  return absl::OkStatus();
}

void InOrderSink::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  StopLocked();
}

int64_t InOrderSink::emitted() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_;
}

void InOrderSink::StopLocked() {
  failed_ = true;
  ready_.clear();
  room_.notify_all();
}

}  // namespace slimpack::support
