// Deterministic synthetic weights for the quantization tests.
#ifndef SLIMPACK_TESTS_QUANTIZE_NUMERICS_QUANT_TEST_UTIL_H_
#define SLIMPACK_TESTS_QUANTIZE_NUMERICS_QUANT_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <vector>

namespace slimpack::quant::testing {

inline std::vector<float> Gaussian(int64_t n, uint32_t seed, float sigma = 1,
                                   float mean = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(mean, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

// Heavy-tailed (Student t, 3 dof): where clipping pays.
inline std::vector<float> HeavyTailed(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::student_t_distribution<float> d(3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace slimpack::quant::testing

#endif  // SLIMPACK_TESTS_QUANTIZE_NUMERICS_QUANT_TEST_UTIL_H_
