// support/ordered_products: the blocked kernel against the plain loops it
// must equal bit for bit.
#include "support/ordered_products.h"

#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace slimpack::support {
namespace {

// The register-blocked kernel equals the plain triple loop bit for bit
// (same products, same subtraction order per element), for row counts
// around its 4- and 8-row blocks (16 and more: the pass that prefetches the
// next strip), column counts around its 8-wide strips and a padded last
// strip, and an `out` wider than the columns it updates.
TEST(OrderedProductsTest, SubtractProductsEqualsThePlainLoop) {
  std::mt19937 rng(5);
  std::normal_distribution<double> d;
  for (int64_t rows : {1, 3, 4, 8, 9, 12, 16, 17, 24}) {
    for (int64_t cols : {1, 7, 8, 16, 21}) {
      for (int64_t count : {0, 1, 5, 33}) {
        const int64_t ldo = cols + 3, ldc = count + 2;
        const int64_t sstride = count * kStripWidth + 16;
        std::vector<double> out(static_cast<size_t>(rows * ldo));
        std::vector<double> coef(static_cast<size_t>(rows * ldc));
        std::vector<double> src(static_cast<size_t>(
            StripCount(cols) * sstride));
        for (double& v : out) v = d(rng);
        for (double& v : coef) v = d(rng);
        for (double& v : src) v = d(rng);
        std::vector<double> want = out;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) {
            double acc = want[r * ldo + c];
            for (int64_t k = 0; k < count; ++k) {
              acc -= coef[r * ldc + k] *
                     src[(c / 8) * sstride + k * 8 + c % 8];
            }
            want[r * ldo + c] = acc;
          }
        }
        SubtractProducts(out.data(), ldo, coef.data(), ldc,
                                   src.data(), sstride, rows, count, cols);
        EXPECT_EQ(std::memcmp(out.data(), want.data(), out.size() * 8), 0)
            << rows << "x" << cols << " count " << count;
        // Negated coefficients add the products: the same bits as +=.
        std::vector<double> neg = coef, plus = want;
        for (double& v : neg) v = -v;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) {
            double acc = plus[r * ldo + c];
            for (int64_t k = 0; k < count; ++k) {
              acc += coef[r * ldc + k] *
                     src[(c / 8) * sstride + k * 8 + c % 8];
            }
            plus[r * ldo + c] = acc;
          }
        }
        SubtractProducts(want.data(), ldo, neg.data(), ldc, src.data(),
                         sstride, rows, count, cols);
        EXPECT_EQ(std::memcmp(want.data(), plus.data(), plus.size() * 8), 0)
            << "negated, " << rows << "x" << cols << " count " << count;
      }
    }
  }
}

// SubtractScaled is the plain loop's multiply and subtraction per element,
// whatever vector width runs it (lengths around the vector widths).
TEST(OrderedProductsTest, SubtractScaledEqualsThePlainLoop) {
  std::mt19937 rng(9);
  std::normal_distribution<double> d;
  for (int64_t n : {0, 1, 3, 4, 7, 8, 9, 31, 64, 129}) {
    std::vector<double> out(static_cast<size_t>(n) + 1), src(static_cast<size_t>(n) + 1);
    for (double& v : out) v = d(rng);
    for (double& v : src) v = d(rng);
    const double scale = d(rng);
    std::vector<double> want = out;
    for (int64_t j = 0; j < n; ++j) want[j] = want[j] - scale * src[j];
    // From an odd offset too: no alignment is assumed.
    SubtractScaled(out.data(), src.data(), scale, n);
    EXPECT_EQ(std::memcmp(out.data(), want.data(), out.size() * 8), 0) << n;
    if (n > 0) {
      std::vector<double> o2 = out, w2 = out;
      for (int64_t j = 1; j < n; ++j) w2[j] = w2[j] - scale * src[j - 1];
      SubtractScaled(o2.data() + 1, src.data(), scale, n - 1);
      EXPECT_EQ(std::memcmp(o2.data(), w2.data(), o2.size() * 8), 0) << "offset, " << n;
    }
  }
}

}  // namespace
}  // namespace slimpack::support
