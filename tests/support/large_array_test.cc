// support/large_array: storage past the huge-page threshold is 2 MiB
// aligned and behaves as a std::vector's (value-initialised, copied,
// resized across the threshold); smaller arrays come from operator new.
#include "support/large_array.h"

#include <cstdint>
#include <numeric>

#include "gtest/gtest.h"

namespace slimpack::support {
namespace {

TEST(LargeArrayTest, LargeStorageIsHugePageAlignedAndAVector) {
  const size_t n = kLargeArrayBytes / sizeof(double) + 3;  // just past it
  LargeArray<double> a(n);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % (size_t{2} << 20), 0u);
  for (double v : a) ASSERT_EQ(v, 0.0);
  std::iota(a.begin(), a.end(), 1.0);
  LargeArray<double> b = a;
  EXPECT_EQ(b, a);
  EXPECT_EQ(b[n - 1], static_cast<double>(n));
  // Shrinking below the threshold and growing past it again moves the
  // contents between the two kinds of storage.
  b.resize(10);
  b.shrink_to_fit();
  EXPECT_EQ(b.size(), 10u);
  EXPECT_EQ(b[9], 10.0);
  b.resize(n);
  EXPECT_EQ(b[9], 10.0);
  EXPECT_EQ(b[n - 1], 0.0);
}

TEST(LargeArrayTest, SmallArraysWork) {
  LargeArray<int> s(5, 7);
  s.push_back(8);
  EXPECT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0], 7);
  EXPECT_EQ(s[5], 8);
}

TEST(LargeArrayTest, ImpossibleSizesThrow) {
  LargeArrayAllocator<double> alloc;
  EXPECT_THROW(alloc.allocate(static_cast<size_t>(-1) / 4), std::bad_alloc);
}

}  // namespace
}  // namespace slimpack::support
