// Sends a file being appended to back to disk while it is written, so the
// writer's final fsync finds little left to do. Two steps, by how much was
// appended since the last one:
//   - every 8 MiB, sync_file_range(SYNC_FILE_RANGE_WRITE) starts writing the
//     new pages back without waiting (otherwise a file below the dirty-page
//     thresholds stays in memory until the fsync, which then writes it all
//     while the CPU idles: 0.26 s of a 425 MB GGUF);
//   - every 64 MiB, one fdatasync on a thread of its own. Written back is not
//     durable yet: the device (or, in a VM, the host) may hold it in a
//     volatile cache until a flush, which the final fsync would otherwise
//     wait for as a whole (0.1-0.3 s for a 425 MB GGUF or a 375 MB int4
//     shard on our CI type's VM, 8-12 % of the conversion).
// At most one fdatasync runs at a time; a thread that cannot start costs
// nothing but that overlap. Used by AtomicFile and the shard writer.
#ifndef SLIMPACK_SUPPORT_WRITE_BACK_H_
#define SLIMPACK_SUPPORT_WRITE_BACK_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace slimpack::support {

// Asks the kernel to start writing [offset, offset + size) of `fd` back now,
// without waiting. Purely a hint: errors surface at fsync.
void StartWriteback(int fd, uint64_t offset, uint64_t size);

class WriteBack {
 public:
  explicit WriteBack(int fd) : fd_(fd) {}
  ~WriteBack() { Join(); }
  WriteBack(const WriteBack&) = delete;
  WriteBack& operator=(const WriteBack&) = delete;

  // The file now holds `size` bytes (appended since the last call).
  void Appended(uint64_t size);
  // Waits for a running flush. Returns the errno of the first flush that
  // failed, or 0: Linux reports a writeback error once per open file, so
  // a flush may have consumed what the final fsync would otherwise say.
  int Finish();

 private:
  void Join();
  int fd_;
  uint64_t written_back_ = 0;  // bytes handed to StartWriteback
  uint64_t flushed_ = 0;       // bytes appended when the last flush started
  std::vector<std::thread> flusher_;
  std::atomic<bool> flushing_{false};
  // Written only by a flush thread, read only after joining it.
  int flush_errno_ = 0;
};

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_WRITE_BACK_H_
