// Helpers for the observer tests: deterministic distributions (SplitMix64 +
// Box-Muller, portable across standard libraries) and temp directories.
#ifndef SLIMPACK_TESTS_CALIBRATION_TEST_DATA_H_
#define SLIMPACK_TESTS_CALIBRATION_TEST_DATA_H_

#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace slimpack::calibration::test_data {

inline double Uniform01(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return ((z >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
}

inline std::vector<float> Gaussian(int64_t n, uint64_t seed) {
  std::vector<float> out;
  uint64_t s = seed;
  while (static_cast<int64_t>(out.size()) < n) {
    const double u = Uniform01(s), v = Uniform01(s);
    out.push_back(static_cast<float>(std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v)));
  }
  return out;
}

// A fresh directory under the gtest temp dir, removed when the test binary
// exits.
inline std::string NewTempDir(const std::string& prefix) {
  static struct Cleanup {
    std::vector<std::string> dirs;
    ~Cleanup() {
      std::error_code ignored;
      for (const auto& d : dirs) std::filesystem::remove_all(d, ignored);
    }
  } cleanup;
  std::string templ = ::testing::TempDir() + "/" + prefix + "_XXXXXX";
  EXPECT_NE(mkdtemp(templ.data()), nullptr);
  cleanup.dirs.push_back(templ);
  return templ;
}

}  // namespace slimpack::calibration::test_data

#endif  // SLIMPACK_TESTS_CALIBRATION_TEST_DATA_H_
