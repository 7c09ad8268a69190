#include "ir/float_convert.h"
#include "support/cpu_features.h"

#include <cstring>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define SLIMPACK_HAVE_F16C_PATH 1
#endif

namespace slimpack::ir {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "element conversion assumes a little-endian host, like the "
              "format's payloads");

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <typename From, typename To, typename Fn>
void Map(const uint8_t* src, uint8_t* dst, uint64_t numel, Fn fn) {
  for (uint64_t i = 0; i < numel; ++i) {
    From in;
    std::memcpy(&in, src + i * sizeof(From), sizeof(From));
    To out = fn(in);
    std::memcpy(dst + i * sizeof(To), &out, sizeof(To));
  }
}

#ifdef SLIMPACK_HAVE_F16C_PATH
__attribute__((target("avx,f16c"))) void F32ToF16F16c(const uint8_t* src,
                                                       uint8_t* dst,
                                                       uint64_t numel) {
  uint64_t i = 0;
  for (; i + 8 <= numel; i += 8) {
    __m256 v = _mm256_loadu_ps(reinterpret_cast<const float*>(src + 4 * i));
    // Explicit round-to-nearest-even, whatever MXCSR says.
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), h);
  }
  internal::F32ToF16Scalar(src + 4 * i, dst + 2 * i, numel - i);
}

// f16 -> f32 by vcvtph2ps, exact for every finite value like F16ToF32;
// an eight holding an Inf or NaN goes through F16ToF32 (vcvtph2ps quiets a
// signalling NaN, F16ToF32 keeps its bits), so the bits do not depend on the
// CPU. The scalar loop was the largest cost of a GGUF conversion after the
// quantizer.
__attribute__((target("avx,f16c"))) void F16ToF32F16c(const uint8_t* src, uint8_t* dst,
                                                       uint64_t numel) {
  const __m128i exponent = _mm_set1_epi16(0x7C00);
  uint64_t i = 0;
  for (; i + 8 <= numel; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exponent), exponent)) != 0) {
      Map<uint16_t, float>(src + 2 * i, dst + 4 * i, 8, F16ToF32);
      continue;
    }
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + 4 * i), _mm256_cvtph_ps(h));
  }
  Map<uint16_t, float>(src + 2 * i, dst + 4 * i, numel - i, F16ToF32);
}

#endif

}  // namespace

// F16C from CPUID leaf 1 (ECX bit 29): clang before 15 has no "f16c" for
// __builtin_cpu_supports, and the libFuzzer build (scripts/fuzz.sh) is
// clang-14. "avx" also checks that the OS saves the YMM registers. Asked
// once: CPUID leaves a virtual machine for the hypervisor.
bool CpuHasF16c() {
#ifdef SLIMPACK_HAVE_F16C_PATH
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0 &&
           support::CpuAllows(support::CpuFeature::kAvx);
  }();
  return has;
#else
  return false;
#endif
}

uint16_t F32ToF16(float f) {
  const uint32_t x = Bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xFFu;
  uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) {
    // Inf stays Inf; NaN keeps its top payload bits and becomes quiet.
    return static_cast<uint16_t>(sign | 0x7C00u | (mant ? 0x200u | (mant >> 13) : 0));
  }
  const int e = static_cast<int>(exp) - 127 + 15;  // biased f16 exponent
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7C00u);
  if (e <= 0) {
    // Subnormal f16 (or zero): value = m * 2^-24 with m = mant24 >> (14 - e).
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;  // may carry into normal
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // may carry to Inf
  return static_cast<uint16_t>(h);
}

float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return FromBits(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return FromBits(sign);
    // Subnormal: normalise into an f32 normal number (exact).
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    return FromBits(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
                    ((mant & 0x3FFu) << 13));
  }
  return FromBits(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

uint16_t F32ToBf16(float f) {
  const uint32_t x = Bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  }
  // Adding 0x7FFF plus the lowest kept bit rounds to nearest, ties to even;
  // a carry out of the exponent gives Inf, as it should.
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float Bf16ToF32(uint16_t b) { return FromBits(static_cast<uint32_t>(b) << 16); }

float F8E4M3ToF32(uint8_t q) {
  const uint32_t sign = static_cast<uint32_t>(q & 0x80) << 24;
  const uint32_t exp = (q >> 3) & 0x0F;
  const uint32_t mant = q & 0x07;
  if (exp == 0x0F && mant == 0x07) return FromBits(sign | 0x7FC00000u);  // NaN
  if (exp != 0) return FromBits(sign | ((exp + 120) << 23) | (mant << 20));
  // Zero or subnormal m/8 * 2^-6 = m * 2^-9: exact as an f32 product.
  const float v = static_cast<float>(mant) * FromBits(0x3B000000u);  // 2^-9
  return sign ? -v : v;
}

bool IsConvertibleFloat(ir::DType t) {
  return t == ir::DType::kF32 || t == ir::DType::kF16 || t == ir::DType::kBF16;
}

namespace internal {

void F32ToF16Scalar(const uint8_t* src, uint8_t* dst, uint64_t numel) {
  Map<float, uint16_t>(src, dst, numel, F32ToF16);
}

void F32ToF16Fast(const uint8_t* src, uint8_t* dst, uint64_t numel) {
#ifdef SLIMPACK_HAVE_F16C_PATH
  if (CpuHasF16c()) return F32ToF16F16c(src, dst, numel);
#endif
  F32ToF16Scalar(src, dst, numel);
}

}  // namespace internal

absl::Status ConvertFloats(ir::DType from, const uint8_t* src, ir::DType to,
                           uint8_t* dst, uint64_t numel) {
  using ir::DType;
  if (!IsConvertibleFloat(from) || !IsConvertibleFloat(to)) {
    return absl::UnimplementedError(
        "no float conversion from " + std::string(ir::DTypeName(from)) +
        " to " + std::string(ir::DTypeName(to)) +
        " (supported: f32, f16, bf16 in any direction)");
  }
  if (from == to) {
    std::memcpy(dst, src, numel * (ir::DTypeBits(from) / 8));
    return absl::OkStatus();
  }
  if (from == DType::kF32 && to == DType::kF16) {
    internal::F32ToF16Fast(src, dst, numel);
  } else if (from == DType::kF32) {
    Map<float, uint16_t>(src, dst, numel, F32ToBf16);
  } else if (to == DType::kF32) {
    if (from == DType::kF16) {
#ifdef SLIMPACK_HAVE_F16C_PATH
      if (CpuHasF16c()) {
        F16ToF32F16c(src, dst, numel);
        return absl::OkStatus();
      }
#endif
      Map<uint16_t, float>(src, dst, numel, F16ToF32);
    } else {
      Map<uint16_t, float>(src, dst, numel, Bf16ToF32);
    }
  } else if (from == DType::kF16) {  // f16 -> bf16
    Map<uint16_t, uint16_t>(src, dst, numel,
                            [](uint16_t h) { return F32ToBf16(F16ToF32(h)); });
  } else {  // bf16 -> f16
    Map<uint16_t, uint16_t>(src, dst, numel,
                            [](uint16_t b) { return F32ToF16(Bf16ToF32(b)); });
  }
  return absl::OkStatus();
}

}  // namespace slimpack::ir
