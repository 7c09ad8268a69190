// int8dot's kernel for AVX2 CPUs without a byte dot product (the Haswell to
// Zen 3 generations): VPDPBUSD's exact sums from VPMADDWD, which multiplies
// signed 16-bit pairs into int32. Each 32-bit lane's four bytes are split
// into its even and odd bytes, widened in place to 16 bits (unsigned:
// masked / shifted; signed: shifted left then arithmetically right), so
// one VPMADDWD adds u0*s0 + u2*s2 and another u1*s1 + u3*s3: at most
// 2 * 255 * 128 in magnitude, exact, and the int32 additions wrap as the
// instruction's do. VPMADDUBSW, the usual AVX2 route, saturates its 16-bit
// pair sums and so cannot give ONNX's integer result. Tiles of up to
// 4 rows x 16 columns (int8_dot_ymm_tile.h): eight accumulators, the
// panel's widened halves and a row's leave the rest of the sixteen ymm
// registers. Compiled with
// -mavx2 (runtime/CMakeLists.txt) and called only after support::CpuAllows;
// nothing here may be an inline function shared with other objects (hence
// no std::min: its instantiation could be the copy the linker keeps).
#include "runtime/kernels/int8_dot.h"
#include "support/cpu_features.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

#include <cstring>

#include "runtime/kernels/int8_dot_ymm_tile.h"

namespace slimpack::runtime::kernels::int8dot {
namespace {

// A vector of bytes split into 16-bit lanes: `even` holds bytes 0, 2, ...
// and `odd` bytes 1, 3, ..., each zero- or sign-extended.
struct Halves {
  __m256i even, odd;
};

inline Halves Unsigned(__m256i v) {
  return {_mm256_and_si256(v, _mm256_set1_epi16(0x00FF)), _mm256_srli_epi16(v, 8)};
}

inline Halves Signed(__m256i v) {
  return {_mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8), _mm256_srai_epi16(v, 8)};
}

// The tile's multiply-add (int8_dot_ymm_tile.h): the panel widened once per
// vector, the row once per broadcast; tiles of up to 4 rows x 2 vectors
// (eight accumulators; the widened halves take the other registers).
struct MaddMac {
  static constexpr int kMaxVectors = 2;
  template <bool kSignedRows>
  static Halves Panel(__m256i bytes) {
    return kSignedRows ? Unsigned(bytes) : Signed(bytes);
  }
  template <bool kSignedRows>
  static Halves Row(const Operands& o, int64_t r, int64_t q) {
    const __m256i bytes = YmmRowQuad(o, r, q);
    return kSignedRows ? Signed(bytes) : Unsigned(bytes);
  }
  template <bool kSignedRows>
  static __m256i Add(__m256i acc, const Halves& a, const Halves& b) {
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(a.even, b.even));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a.odd, b.odd));
  }
};

// MaddMac with signed rows already widened (Operands::row_halves): a row's
// halves are two broadcast loads instead of a broadcast and three shifts
// per tile and k, which also freed the registers the tile had spilled
// accumulators to (a W8A8 MobileNet's pointwise layers on AVX2).
struct MaddHalvesMac : MaddMac {
  template <bool kSignedRows>
  static Halves Row(const Operands& o, int64_t r, int64_t q) {
    static_assert(kSignedRows, "row halves are of signed rows");
    const uint32_t* h = o.row_halves + (r * o.kq + q) * 2;
    return {_mm256_set1_epi32(static_cast<int32_t>(h[0])),
            _mm256_set1_epi32(static_cast<int32_t>(h[1]))};
  }
};

}  // namespace

bool HaveAvx2Madd() {
  static const bool ok = support::CpuAllows(support::CpuFeature::kAvx2);
  return ok;
}

bool DotAvx2Madd(const Operands& o) {
  if (!HaveAvx2Madd()) return false;
  if (o.row_halves != nullptr && o.signed_rows) {
    YmmDotSignedRows<MaddHalvesMac>(o);
  } else {
    YmmDot<MaddMac>(o);
  }
  return true;
}

namespace {

// out[i] = the byte of scaled(i, mask, full) (eight floats from element i
// on; `mask` marks the lanes below n, the others must not be read; `full`:
// all eight are): NaN lanes become
// zp, values are clamped to the integer bounds before rounding half to
// even (VCVTPS2DQ in the default rounding mode), as RequantizeVnni512 and
// quantize_internal::SaturateRoundBytes do, so after adding zp every lane
// is in the byte type's range and the saturating packs change nothing.
template <typename Scaled>
void SaturateRoundAvx2(int64_t n, int32_t lo, int32_t hi, int32_t zp, uint8_t* out,
                       const Scaled& scaled) {
  const __m256i vz = _mm256_set1_epi32(zp);
  const __m256 flo = _mm256_set1_ps(static_cast<float>(lo - zp));
  const __m256 fhi = _mm256_set1_ps(static_cast<float>(hi - zp));
  const bool u8 = lo == 0;
  const __m256i all = _mm256_set1_epi32(-1);
  const auto one = [&](int64_t i, __m256i mask, bool full) {
    __m256 x = scaled(i, mask, full);
    x = _mm256_and_ps(x, _mm256_cmp_ps(x, x, _CMP_ORD_Q));
    x = _mm256_min_ps(_mm256_max_ps(x, flo), fhi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(x), vz);
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    // The packs work within 128-bit halves: bytes come out as quarters of
    // the four inputs in the order 0a 1a 2a 3a 0b 1b 2b 3b, put back by
    // a permute of 32-bit lanes.
    const __m256i w01 = _mm256_packs_epi32(one(i, all, true), one(i + 8, all, true));
    const __m256i w23 = _mm256_packs_epi32(one(i + 16, all, true), one(i + 24, all, true));
    const __m256i b = u8 ? _mm256_packus_epi16(w01, w23) : _mm256_packs_epi16(w01, w23);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  for (; i < n; i += 8) {
    const int64_t m = n - i < 8 ? n - i : 8;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(m)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i r = one(i, mask, false);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    const __m128i b = u8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
    alignas(16) uint8_t bytes[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(bytes), b);
    std::memcpy(out + i, bytes, m);
  }
}

}  // namespace

bool RequantizeAvx2(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t lo,
                    int32_t hi, int32_t zp, uint8_t* out) {
  if (!HaveAvx2Madd()) return false;
  const __m256i vb = _mm256_set1_epi32(bias);
  const __m256 vm = _mm256_set1_ps(mult);
  SaturateRoundAvx2(n, lo, hi, zp, out, [&](int64_t i, __m256i mask, bool full) {
    const __m256i a = full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i))
                           : _mm256_maskload_epi32(acc + i, mask);
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(a, vb)), vm);
  });
  return true;
}

bool QuantizeAvx2(const float* x, int64_t n, float scale, int32_t lo, int32_t hi, int32_t zp,
                  uint8_t* out) {
  if (!HaveAvx2Madd()) return false;
  const __m256 vs = _mm256_set1_ps(scale);
  SaturateRoundAvx2(n, lo, hi, zp, out, [&](int64_t i, __m256i mask, bool full) {
    // Masked-off lanes read as 0 and are not stored (with scale 0 they
    // raise the masked invalid flag, as the scalar loop's 0 / 0 would).
    return _mm256_div_ps(full ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + i, mask), vs);
  });
  return true;
}

}  // namespace slimpack::runtime::kernels::int8dot

#else

namespace slimpack::runtime::kernels::int8dot {
bool HaveAvx2Madd() { return false; }
bool DotAvx2Madd(const Operands&) { return false; }
bool RequantizeAvx2(const int32_t*, int64_t, int32_t, float, int32_t, int32_t, int32_t,
                    uint8_t*) {
  return false;
}
bool QuantizeAvx2(const float*, int64_t, float, int32_t, int32_t, int32_t, uint8_t*) {
  return false;
}
}  // namespace slimpack::runtime::kernels::int8dot

#endif
