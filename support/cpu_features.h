// Which x86-64 instruction sets the kernels may use: the CPU's, capped by
// the SLIMPACK_CPU_MAX environment variable (avx512, avx2 or sse2), read
// once per process. The cap is for timing an AVX-512 machine's AVX2 and
// SSE2 paths: every path gives the same bits, so it changes speed only.
// Loops GCC clones per target (support/simd_clones.h) pick their clone by
// the CPU alone, and the standalone loader (formats/shard/loader/) reads no
// environment: neither follows the cap.
#ifndef SLIMPACK_SUPPORT_CPU_FEATURES_H_
#define SLIMPACK_SUPPORT_CPU_FEATURES_H_

// Declarations only, no includes: objects compiled for AVX-512 or AVX2 as a
// whole include this, and an inline function they emitted could be the copy
// the linker keeps for every caller.

namespace slimpack::support {

// The highest instruction-set level kernels may use.
enum class CpuCap { kSse2, kAvx2, kAvx512 };

// The features kernels ask about: AVX, AVX2 and FMA count as kAvx2, the
// AVX-512 ones as kAvx512. kAvx2Fma is AVX2 and FMA both, what most AVX2
// kernels need. kAvxVnni (the 256-bit byte dot product of Alder Lake and
// Zen 5) also counts as kAvx512: the avx2 cap stands for the CPUs from
// Haswell to Zen 3, which lack it.
enum class CpuFeature {
  kAvx,
  kAvx2,
  kFma,
  kAvx2Fma,
  kAvx512f,
  kAvx512bw,
  kAvx512vbmi,
  kAvx512vnni,
  kAvxVnni
};

// The cap SLIMPACK_CPU_MAX's value names: true and *cap set for "avx512",
// "avx2" or "sse2", false for anything else.
bool ParseCpuCap(const char* text, CpuCap* cap);

// The cap in force: kAvx512 (no cap) unless SLIMPACK_CPU_MAX lowers it. A
// value ParseCpuCap refuses ends the process with a message quoting it and
// exit status 2: kernels choosing a path cannot return an error, and timing
// a path other than the one asked for would mislead. Programs call it first
// thing in main (cli/main.cc), so that exit happens before any thread runs.
CpuCap CpuCapInForce();

// True when this CPU has `f` and the cap allows its level.
bool CpuAllows(CpuFeature f);

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_CPU_FEATURES_H_
