// Drops pages of memory-mapped input files from the writer's address space
// once a tensor chunk has been written, so peak RSS does not grow with the
// model (file pages stay in the page cache; a later access re-reads them),
// and maps a range in at once before it is read (PrefaultRead).
#ifndef SLIMPACK_SUPPORT_INPUT_PAGES_H_
#define SLIMPACK_SUPPORT_INPUT_PAGES_H_

#include <cstdint>
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

  size_t mapping_count() const { return ranges_.size(); }

 private:
  // Whether [begin, end) lies within one snapshotted mapping.
  bool Inside(uintptr_t begin, uintptr_t end) const;

  std::vector<std::pair<uintptr_t, uintptr_t>> ranges_;  // sorted [begin, end)
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
