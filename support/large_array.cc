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
#endif
  return p;
}

void FreeLarge(void* p) noexcept { std::free(p); }

}  // namespace slimpack::support
