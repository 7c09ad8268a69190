// Prints digests of the bits the portable numerics produce: every
// support/portable_math.h function over a sweep of inputs, and the generic
// GEMM micro-kernel (runtime/gemm/) on fixed operands. Standard library
// only, so scripts/aarch64_loader_test.sh builds it for the host and for
// aarch64 and requires the same lines from both: the same bits on an arm64
// phone as on an x86-64 workstation. (On x86-64, tests/runtime/gemm_test.cc
// proves every SIMD micro-kernel gives the generic kernel's bits.)
//   portable_digest
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/gemm/micro_kernel.h"
#include "support/portable_math.h"

namespace {

namespace pmath = slimpack::pmath;

struct Digest {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  int64_t n = 0;
  void Add(const void* p, size_t bytes) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ull;
    ++n;
  }
  void Add(double v) { Add(&v, sizeof v); }
  void Add(float v) { Add(&v, sizeof v); }
};

// A fixed pseudo-random sequence (no <random> distributions: their
// algorithms are the library's choice).
struct Lcg {
  uint64_t s;
  double Next() {  // uniform in [0, 1)
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(s >> 11) * (1.0 / 9007199254740992.0);
  }
};

using D = double (*)(double);

void MathDigests() {
  struct Fn {
    const char* name;
    D f;
    double lo, hi;
  };
  const Fn fns[] = {
      {"exp", pmath::Exp, -745, 709},     {"expm1", pmath::Expm1, -40, 40},
      {"log", pmath::Log, 0, 1e300},      {"log1p", pmath::Log1p, -1, 1e10},
      {"log10", pmath::Log10, 0, 1e300},  {"sin", pmath::Sin, -1e6, 1e6},
      {"cos", pmath::Cos, -1e6, 1e6},     {"tan", pmath::Tan, -100, 100},
      {"atan", pmath::Atan, -1e5, 1e5},   {"asin", pmath::Asin, -1, 1},
      {"acos", pmath::Acos, -1, 1},       {"sinh", pmath::Sinh, -720, 720},
      {"cosh", pmath::Cosh, -720, 720},   {"tanh", pmath::Tanh, -30, 30},
      {"asinh", pmath::Asinh, -1e200, 1e200}, {"acosh", pmath::Acosh, 1, 1e200},
      {"atanh", pmath::Atanh, -1, 1},
  };
  for (const Fn& fn : fns) {
    Digest dd, df;
    Lcg rng{42};
    for (int i = 0; i < 200000; ++i) {
      const double u = rng.Next();
      // Half the inputs uniform on [lo, hi], half log-spaced near zero.
      const double x = i % 2 == 0 ? fn.lo + (fn.hi - fn.lo) * u
                                  : (u < 0.5 ? -1 : 1) * pmath::Exp(-40.0 * rng.Next());
      dd.Add(fn.f(x));
      df.Add(static_cast<float>(fn.f(static_cast<double>(static_cast<float>(x)))));
    }
    std::printf("%-6s double %016" PRIx64 " float %016" PRIx64 " (%" PRId64 " values)\n",
                fn.name, dd.h, df.h, dd.n);
  }
  Digest dp;
  Lcg rng{7};
  for (int i = 0; i < 200000; ++i) {
    const double x = 1e-3 + 50.0 * rng.Next(), y = -20.0 + 40.0 * rng.Next();
    dp.Add(pmath::Pow(x, y));
    dp.Add(pmath::Pow(static_cast<float>(x), static_cast<float>(y)));
  }
  std::printf("pow    %016" PRIx64 " (%" PRId64 " values)\n", dp.h, dp.n);
}

void GemmDigest() {
  namespace gemm = slimpack::runtime::gemm;
  gemm::MicroKernel k;
  gemm::GenericKernel(&k);
  Digest d;
  Lcg rng{11};
  for (int64_t kc : {1, 7, 256, 1000}) {
    std::vector<float> a(kc * k.mr), b(kc * k.nr), acc(k.mr * k.nr);
    for (float& v : a) v = static_cast<float>((rng.Next() - 0.5) * pmath::Exp(40.0 * rng.Next() - 20.0));
    for (float& v : b) v = static_cast<float>((rng.Next() - 0.5) * pmath::Exp(40.0 * rng.Next() - 20.0));
    k.fn(kc, a.data(), b.data(), acc.data(), true);
    for (float v : acc) d.Add(v);
    k.fn(kc, a.data(), b.data(), acc.data(), false);  // a continued chain
    for (float v : acc) d.Add(v);
  }
  std::printf("gemm   %016" PRIx64 " (%" PRId64 " values)\n", d.h, d.n);
}

}  // namespace

int main() {
  MathDigests();
  GemmDigest();
  return 0;
}
