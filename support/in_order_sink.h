// Pieces of a byte stream produced out of order by worker threads, handed to
// one sink in order. The thread that finishes the piece due next hands it
// over, and any after it already waiting; the others go back to producing.
// A worker starts piece `c` only while fewer than `backlog` pieces before it
// are still to be handed over (the worker holding the piece due never
// waits), so a slow sink holds the producers back instead of letting
// finished pieces pile up in memory: besides the piece inside the sink, at
// most `backlog` pieces are being produced or waiting at once.
#ifndef SLIMPACK_SUPPORT_IN_ORDER_SINK_H_
#define SLIMPACK_SUPPORT_IN_ORDER_SINK_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "support/byte_sink.h"

namespace slimpack::support {

class InOrderSink {
 public:
  // `sink` must outlive this object; `backlog` >= 1.
  InOrderSink(const ByteSink& sink, int64_t backlog) : sink_(sink), backlog_(backlog) {}

  // Blocks until piece `c` may be produced; false once stopped (an error).
  bool WaitForRoom(int64_t c);

  // Hands piece `c` over, with every piece after it that is ready, when it
  // is the one due; otherwise keeps it. Returns the sink's error, which
  // also stops every producer; after a stop pieces are dropped.
  absl::Status Deposit(int64_t c, std::vector<uint8_t> bytes);

  // After a producer's error: no more pieces are started or handed over.
  void Stop();

  // How many pieces have been handed over.
  int64_t emitted();

 private:
  void StopLocked();

  const ByteSink& sink_;
  const int64_t backlog_;
  std::mutex mu_;
  std::condition_variable room_;
  std::map<int64_t, std::vector<uint8_t>> ready_;
  int64_t next_ = 0;
  bool emitting_ = false;
  bool failed_ = false;
};

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_IN_ORDER_SINK_H_
