// std::vector storage for arrays of many megabytes (GPTQ's 4096 x 4096
// Hessian and its factors are 128 MiB each): allocated 2 MiB-aligned,
// advised as transparent huge pages and populated at once, so the kernel
// maps them 2 MiB at a time instead of faulting each 4 KiB page in on
// first touch. On the
// virtual machines we measure on a 4 KiB fault costs ~12 us: first-touching
// a 128 MiB array took 0.40 s, with huge pages 0.014 s once the kernel has
// free huge pages (bench/quant/quant_bench's GPTQ phases). Where THP is
// disabled the advice is ignored and nothing else changes; the contents
// never depend on it.
#ifndef SLIMPACK_SUPPORT_LARGE_ARRAY_H_
#define SLIMPACK_SUPPORT_LARGE_ARRAY_H_

#include <cstddef>
#include <new>
#include <vector>

namespace slimpack::support {

// Below this size an allocation goes to operator new as usual.
constexpr size_t kLargeArrayBytes = size_t{4} << 20;

// Returns `bytes` of 2 MiB-aligned storage advised MADV_HUGEPAGE, or throws
// std::bad_alloc; FreeLarge releases it.
void* AllocateLarge(size_t bytes);
void FreeLarge(void* p) noexcept;

template <typename T>
struct LargeArrayAllocator {
  using value_type = T;
  LargeArrayAllocator() = default;
  template <typename U>
  LargeArrayAllocator(const LargeArrayAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
    if (bytes < kLargeArrayBytes) return static_cast<T*>(::operator new(bytes));
    return static_cast<T*>(AllocateLarge(bytes));
  }
  // `n` is the count allocate() was given, so the same branch is taken.
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) < kLargeArrayBytes) {
      ::operator delete(p);
    } else {
      FreeLarge(p);
    }
  }
  template <typename U>
  bool operator==(const LargeArrayAllocator<U>&) const noexcept { return true; }
  template <typename U>
  bool operator!=(const LargeArrayAllocator<U>&) const noexcept { return false; }
};

template <typename T>
using LargeArray = std::vector<T, LargeArrayAllocator<T>>;

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_LARGE_ARRAY_H_
