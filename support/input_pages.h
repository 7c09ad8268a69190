// Drops pages of memory-mapped input files from the writer's address space
// once a tensor chunk has been written, so peak RSS does not grow with the
// model (file pages stay in the page cache; a later access re-reads them),
// and maps a range in at once before it is read (PrefaultRead), or reads
// a mapped range through the file instead of the mapping (Copy).
#ifndef SLIMPACK_SUPPORT_INPUT_PAGES_H_
#define SLIMPACK_SUPPORT_INPUT_PAGES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace slimpack::support {

class InputPages {
 public:
  // Snapshots this process's read-only mappings of `input_files`
  // (/proc/self/maps, matched by device and inode). Without /proc, or for
  // other memory, Release does nothing.
  static InputPages Snapshot(const std::vector<std::string>& input_files);

  // Releases the whole pages inside [data, data + size) if the range lies in
  // one read-only mapping of an input file. Anything else is never touched:
  // MADV_DONTNEED would zero heap memory (ONNX raw_data owned by a parsed
  // protobuf) and undo relocations in a library's read-only segments.
  void Release(const uint8_t* data, uint64_t size) const;

  // Copies [data, data + size) to `dst`. A range inside one snapshotted
  // mapping is read from its file with pread (the same bytes: the mapping
  // is of that file), anything else, or a read that fails, with memcpy.
  // Touching a mapping's pages for the first time is what a streaming
  // conversion pays for its input: on our VMs (shadow-paged) a first pass
  // over a populated mapping of the peer input ran at 2.0-2.2 GB/s and
  // pread into a small reused buffer at 6.9-7.1 GB/s (the second pass over
  // the mapping, 14-21 GB/s, is what a conversion never makes); the bytes
  // read this way also never enter the process's RSS.
  void Copy(const uint8_t* data, uint64_t size, uint8_t* dst) const;

  size_t mapping_count() const { return ranges_.size(); }

 private:
  struct Range {
    uintptr_t begin = 0, end = 0;  // [begin, end) of the mapping
    uint64_t file_offset = 0;      // of `begin` in the file
    int fd = -1;                   // the file opened for reading, or -1
  };
  // The snapshotted mapping holding all of [begin, end), or null.
  const Range* Find(uintptr_t begin, uintptr_t end) const;

  std::vector<Range> ranges_;  // sorted by begin
  // Descriptors opened by Snapshot, closed with the last copy.
  std::shared_ptr<std::vector<int>> fds_;
  uintptr_t page_size_ = 4096;
};

// Maps the pages of [data, data + size) in now, in one call
// (MADV_POPULATE_READ; advice, ignored by kernels before 5.14): a reader
// about to go through a mapped file's range sequentially pays one system
// call instead of a page fault every few pages, which on our VMs cost more
// than reading the bytes. Harmless on any readable memory.
void PrefaultRead(const uint8_t* data, uint64_t size);

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_INPUT_PAGES_H_
