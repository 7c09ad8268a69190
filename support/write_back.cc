#include "support/write_back.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "support/threads.h"

namespace slimpack::support {

void StartWriteback(int fd, uint64_t offset, uint64_t size) {
#if defined(__linux__)
  ::sync_file_range(fd, static_cast<off64_t>(offset), static_cast<off64_t>(size),
                    SYNC_FILE_RANGE_WRITE);
#endif
}

void WriteBack::Appended(uint64_t size) {
  constexpr uint64_t kWritebackBytes = uint64_t{8} << 20;
  constexpr uint64_t kFlushBytes = uint64_t{64} << 20;
  if (size < written_back_ || size - written_back_ < kWritebackBytes) return;
  StartWriteback(fd_, written_back_, size - written_back_);
  written_back_ = size;
#if defined(__linux__)
  if (size - flushed_ < kFlushBytes || flushing_.load(std::memory_order_acquire)) return;
  Join();  // the previous flush is done (flushing_ is false)
  flushed_ = size;
  flushing_.store(true, std::memory_order_release);
  const int fd = fd_;
  std::atomic<bool>* flushing = &flushing_;
  int* failure = &flush_errno_;
  if (!TryStartThread(flusher_, [fd, flushing, failure] {
        int rc;
        do {
          rc = ::fdatasync(fd);
        } while (rc != 0 && errno == EINTR);
        if (rc != 0 && *failure == 0) *failure = errno;
        flushing->store(false, std::memory_order_release);
      })) {
    flushing_.store(false, std::memory_order_release);
  }
#endif
}

int WriteBack::Finish() {
  Join();
  return flush_errno_;
}

void WriteBack::Join() {
  for (std::thread& t : flusher_) t.join();
  flusher_.clear();
}

}  // namespace slimpack::support
