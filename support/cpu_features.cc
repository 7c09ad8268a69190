// See cpu_features.h.
#include "support/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace slimpack::support {

bool ParseCpuCap(const char* text, CpuCap* cap) {
  if (std::strcmp(text, "avx512") == 0) {
    *cap = CpuCap::kAvx512;
  } else if (std::strcmp(text, "avx2") == 0) {
    *cap = CpuCap::kAvx2;
  } else if (std::strcmp(text, "sse2") == 0) {
    *cap = CpuCap::kSse2;
  } else {
    return false;
  }
  return true;
}

CpuCap CpuCapInForce() {
  static const CpuCap cap = [] {
    CpuCap parsed = CpuCap::kAvx512;
    const char* env = std::getenv("SLIMPACK_CPU_MAX");
    if (env != nullptr && !ParseCpuCap(env, &parsed)) {
      std::fprintf(stderr, "slimpack: SLIMPACK_CPU_MAX='%s': expected avx512, avx2 or sse2\n",
                   env);
      std::exit(2);
    }
    return parsed;
  }();
  return cap;
}

bool CpuAllows(CpuFeature f) {
#if defined(__x86_64__)
  const CpuCap cap = CpuCapInForce();
  switch (f) {
    case CpuFeature::kAvx:
      return cap >= CpuCap::kAvx2 && __builtin_cpu_supports("avx");
    case CpuFeature::kAvx2:
      return cap >= CpuCap::kAvx2 && __builtin_cpu_supports("avx2");
    case CpuFeature::kFma:
      return cap >= CpuCap::kAvx2 && __builtin_cpu_supports("fma");
    case CpuFeature::kAvx2Fma:
      return cap >= CpuCap::kAvx2 && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma");
    case CpuFeature::kAvx512f:
      return cap >= CpuCap::kAvx512 && __builtin_cpu_supports("avx512f");
    case CpuFeature::kAvx512bw:
      return cap >= CpuCap::kAvx512 && __builtin_cpu_supports("avx512bw");
    case CpuFeature::kAvx512vbmi:
      return cap >= CpuCap::kAvx512 && __builtin_cpu_supports("avx512vbmi");
    case CpuFeature::kAvx512vnni:
      return cap >= CpuCap::kAvx512 && __builtin_cpu_supports("avx512vnni");
    case CpuFeature::kAvxVnni: {
      // CPUID leaf 7, subleaf 1, EAX bit 4 (GCC 12's and clang 14's
      // __builtin_cpu_supports do not know "avxvnni"); AVX2 covers the OS
      // saving ymm state. Asked once.
      static const bool cpu = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        return __builtin_cpu_supports("avx2") && __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 &&
               (a & (1u << 4)) != 0;
      }();
      return cap >= CpuCap::kAvx512 && cpu;
    }
  }
  return false;
#else
  (void)f;
  return false;
#endif
}

}  // namespace slimpack::support
