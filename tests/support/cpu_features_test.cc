// The SLIMPACK_CPU_MAX cap: its three values and nothing else parse, and
// CpuAllows is the CPU's answer lowered to the cap (support/cpu_features.h).
// The process-wide cap is whatever this test's environment sets (none under
// ctest); tests/cli/exit_codes_test.sh checks a refused value ends a run
// with exit 2, and cross_cpu_bytes_test.sh that capped runs give the same
// bytes as uncapped ones.
#include "support/cpu_features.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace slimpack::support {
namespace {

TEST(CpuFeaturesTest, ParsesTheThreeCapsAndRefusesTheRest) {
  CpuCap cap = CpuCap::kSse2;
  EXPECT_TRUE(ParseCpuCap("avx512", &cap));
  EXPECT_EQ(cap, CpuCap::kAvx512);
  EXPECT_TRUE(ParseCpuCap("avx2", &cap));
  EXPECT_EQ(cap, CpuCap::kAvx2);
  EXPECT_TRUE(ParseCpuCap("sse2", &cap));
  EXPECT_EQ(cap, CpuCap::kSse2);
  for (const char* bad : {"", "AVX2", "avx512f", "avx2 ", "sse4.2", "native"}) {
    cap = CpuCap::kAvx2;
    EXPECT_FALSE(ParseCpuCap(bad, &cap)) << "'" << bad << "'";
    EXPECT_EQ(cap, CpuCap::kAvx2) << "a refused value leaves the cap alone";
  }
}

#if defined(__x86_64__)
TEST(CpuFeaturesTest, AllowsWhatTheCpuHasUpToTheCap) {
  CpuCap cap = CpuCap::kAvx512;
  if (const char* env = std::getenv("SLIMPACK_CPU_MAX")) {
    ASSERT_TRUE(ParseCpuCap(env, &cap)) << env;
  }
  EXPECT_EQ(CpuCapInForce(), cap);
  const bool avx2_level = cap >= CpuCap::kAvx2, avx512_level = cap == CpuCap::kAvx512;
  EXPECT_EQ(CpuAllows(CpuFeature::kAvx), avx2_level && __builtin_cpu_supports("avx"));
  EXPECT_EQ(CpuAllows(CpuFeature::kAvx2), avx2_level && __builtin_cpu_supports("avx2"));
  EXPECT_EQ(CpuAllows(CpuFeature::kFma), avx2_level && __builtin_cpu_supports("fma"));
  EXPECT_EQ(CpuAllows(CpuFeature::kAvx2Fma),
            avx2_level && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  EXPECT_EQ(CpuAllows(CpuFeature::kAvx512f), avx512_level && __builtin_cpu_supports("avx512f"));
  EXPECT_EQ(CpuAllows(CpuFeature::kAvx512bw),
            avx512_level && __builtin_cpu_supports("avx512bw"));
  EXPECT_EQ(CpuAllows(CpuFeature::kAvx512vbmi),
            avx512_level && __builtin_cpu_supports("avx512vbmi"));
  EXPECT_EQ(CpuAllows(CpuFeature::kAvx512vnni),
            avx512_level && __builtin_cpu_supports("avx512vnni"));
}
#endif

}  // namespace
}  // namespace slimpack::support
