#include "support/input_pages.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include <fcntl.h>

namespace slimpack::support {

InputPages InputPages::Snapshot(const std::vector<std::string>& input_files) {
  InputPages pages;
  // Matched by device and inode, or by resolved path: on overlay file
  // systems /proc/self/maps shows the lower layer's device and inode.
  std::set<std::pair<dev_t, ino_t>> inputs;
  std::set<std::string> input_paths;
  for (const std::string& path : input_files) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) inputs.emplace(st.st_dev, st.st_ino);
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved)) input_paths.insert(resolved);
  }
  if (inputs.empty() && input_paths.empty()) return pages;
  long ps = ::sysconf(_SC_PAGESIZE);
  if (ps > 0) pages.page_size_ = static_cast<uintptr_t>(ps);
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (!f) return pages;
  pages.fds_ = std::shared_ptr<std::vector<int>>(new std::vector<int>, [](std::vector<int>* fds) {
    for (int fd : *fds) ::close(fd);
    delete fds;
  });
  // One descriptor per mapped file, opened by the path the mapping shows
  // and kept only if it is the mapped file (same device and inode).
  std::map<std::pair<dev_t, ino_t>, int> opened;
  auto open_file = [&](const std::string& path, dev_t dev, ino_t inode) {
    auto it = opened.find({dev, inode});
    if (it != opened.end()) return it->second;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != dev ||
                    st.st_ino != inode)) {
      ::close(fd);
      fd = -1;
    }
    if (fd >= 0) pages.fds_->push_back(fd);
    opened[{dev, inode}] = fd;
    return fd;
  };
  char line[4096];
  while (std::fgets(line, sizeof(line), f)) {
    uintptr_t begin = 0, end = 0;
    char perms[8] = {0};
    unsigned long long offset = 0, inode = 0;
    unsigned int dev_major = 0, dev_minor = 0;
    int path_at = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %llx %x:%x %llu %n",
                    &begin, &end, perms, &offset, &dev_major, &dev_minor,
                    &inode, &path_at) != 7) {
      continue;
    }
    std::string path(line + path_at);
    while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) {
      path.pop_back();
    }
    // A read-only mapping of an input file: dropping its pages loses
    // nothing, they are faulted back in from the file.
    const dev_t dev = makedev(dev_major, dev_minor);
    if (perms[0] == 'r' && perms[1] == '-' &&
        (inputs.count({dev, static_cast<ino_t>(inode)}) ||
         input_paths.count(path))) {
      Range r;
      r.begin = begin;
      r.end = end;
      r.file_offset = offset;
      // (On overlay file systems the mapping's device and inode are the
      // lower layer's, which an opened path does not show: no descriptor,
      // memcpy.)
      if (!path.empty() && path[0] == '/') r.fd = open_file(path, dev, static_cast<ino_t>(inode));
      pages.ranges_.push_back(r);
    }
  }
  std::fclose(f);
  std::sort(pages.ranges_.begin(), pages.ranges_.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  return pages;
}

const InputPages::Range* InputPages::Find(uintptr_t begin, uintptr_t end) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), begin,
                             [](uintptr_t v, const Range& r) { return v < r.begin; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return begin >= it->begin && end <= it->end ? &*it : nullptr;
}

void InputPages::Copy(const uint8_t* data, uint64_t size, uint8_t* dst) const {
  if (size == 0) return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  const Range* r = ranges_.empty() ? nullptr : Find(begin, begin + size);
  if (r != nullptr && r->fd >= 0) {
    uint64_t done = 0;
    const uint64_t at = r->file_offset + (begin - r->begin);
    while (done < size) {
      const ssize_t n = ::pread(r->fd, dst + done, size - done, static_cast<off_t>(at + done));
      if (n > 0) {
        done += static_cast<uint64_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        break;  // the mapping decides: the same bytes, or the same SIGBUS
      }
    }
    if (done == size) return;
  }
  std::memcpy(dst, data, size);
}

void InputPages::Release(const uint8_t* data, uint64_t size) const {
  if (size == 0 || ranges_.empty()) return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t end = begin + size;
  if (Find(begin, end) == nullptr) return;
  // Only pages wholly inside the range: a neighbouring tensor may still be
  // reading the partial pages at either end.
  uintptr_t first = (begin + page_size_ - 1) & ~(page_size_ - 1);
  uintptr_t last = end & ~(page_size_ - 1);
  if (last <= first) return;
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void PrefaultRead(const uint8_t* data, uint64_t size) {
#if defined(MADV_POPULATE_READ)
  if (size == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(data) & ~(page - 1);
  const uintptr_t last = (reinterpret_cast<uintptr_t>(data) + size + page - 1) & ~(page - 1);
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_READ);
#else
  (void)data;
  (void)size;
#endif
}

}  // namespace slimpack::support
