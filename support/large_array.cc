// Huge-page-advised allocations (see large_array.h).
#include "support/large_array.h"

#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace slimpack::support {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

void* AllocateLarge(size_t bytes) {
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  if (rounded < bytes) throw std::bad_alloc();
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: a kernel without THP refuses it and the pages stay 4 KiB.
  (void)::madvise(p, rounded, MADV_HUGEPAGE);
#if defined(MADV_POPULATE_WRITE)
  // And map it now, in one call: on our VMs the advice alone did not give
  // huge pages on first touch (a 32 MiB array still faulted in 4 KiB pages
  // at ~12 us each, 115 ms), populated after it the same array took 3 ms.
  // Every user writes the whole array, so nothing is committed early that
  // would not be. Also advice: a kernel before 5.14 (EINVAL) or a full
  // memory (ENOMEM, then the first touch fails as it always would) leaves
  // the pages to be faulted in.
  (void)::madvise(p, rounded, MADV_POPULATE_WRITE);
#endif
#endif
  return p;
}

void FreeLarge(void* p) noexcept { std::free(p); }

}  // namespace slimpack::support
