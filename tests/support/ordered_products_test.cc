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
// around its 4- and 8-row blocks, column counts around its 8-wide strips and a
// padded last strip, and an `out` wider than the columns it updates.
TEST(OrderedProductsTest, SubtractProductsEqualsThePlainLoop) {
  std::mt19937 rng(5);
  std::normal_distribution<double> d;
  for (int64_t rows : {1, 3, 4, 8, 9, 12, 17}) {
    for (int64_t cols : {1, 7, 8, 21}) {
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

}  // namespace
}  // namespace slimpack::support
