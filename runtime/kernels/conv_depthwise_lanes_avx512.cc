// The channels-in-lanes depthwise kernel (conv_depthwise_lanes.h) for
// AVX-512F: 16 channels a vector. Compiled with -mavx512f -mfma
// (runtime/CMakeLists.txt) and called only after support::CpuAllows.
#include "runtime/kernels/conv_depthwise_lanes.h"

#if defined(__x86_64__) && defined(__AVX512F__)
// GCC 12's _mm512_shuffle_f32x4 starts from _mm512_undefined_ps(), which its
// -Wmaybe-uninitialized reports at every inlined use (a false positive:
// every lane is written).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "runtime/kernels/conv_activation_simd.h"
#include "runtime/kernels/conv_depthwise_lanes_impl.h"

namespace slimpack::runtime::kernels::depthwise_lanes {
namespace {

struct Avx512 {
  static constexpr int kLanes = 16;
  // No byte transposes (conv_depthwise_lanes_impl.h): on zmm they need
  // AVX512BW, which this AVX-512F kernel does not assume.
  static constexpr int kByteBlock = 0;
  using Vec = __m512;
  static __mmask16 Mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }
  static Vec Zero() { return _mm512_setzero_ps(); }
  static Vec Set(float f) { return _mm512_set1_ps(f); }
  static Vec Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  // Masked-off lanes are neither read nor faulted on.
  static Vec LoadN(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(Mask(n), p); }
  static void StoreN(float* p, Vec v, int64_t n) { _mm512_mask_storeu_ps(p, Mask(n), v); }
  static Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec Activate(Vec v, ConvActivation act) { return Activate16(v, act); }
  using VecI = __m512i;
  static VecI Ints(const int32_t* p, int64_t n) { return _mm512_maskz_loadu_epi32(Mask(n), p); }
  static VecI SetInt(int32_t i) { return _mm512_set1_epi32(i); }
  // As int8dot::RequantizeVnni512, after ExactSumsToInts' truncation.
  static Vec Requantize(Vec sum, VecI bias, Vec mult, Vec flo, Vec fhi, VecI zp) {
    const __m512i a = _mm512_add_epi32(_mm512_cvttps_epi32(sum), bias);
    __m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(a), mult);
    x = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), x);
    x = _mm512_min_ps(_mm512_max_ps(x, flo), fhi);
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_cvtps_epi32(x), zp));
  }
  // Every lane is within the byte type's range, so truncation is exact.
  static void StoreBytes(uint8_t* p, Vec v, int64_t n) {
    const __m128i b = _mm512_cvtepi32_epi8(_mm512_castps_si512(v));
    if (n == 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), b);
      return;
    }
    alignas(16) uint8_t bytes[16];  // (a masked byte store needs AVX512BW)
    _mm_store_si128(reinterpret_cast<__m128i*>(bytes), b);
    for (int64_t i = 0; i < n; ++i) p[i] = bytes[i];
  }
  static Vec Add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec Sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
  // kLanes bytes as floats (exact).
  static Vec Bytes(const uint8_t* p) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
  }
  static Vec Bytes(const int8_t* p) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
  }

  // 16 x 16 in four rounds of 16 shuffles: pairs of rows interleaved, then
  // 4-float groups within 128-bit lanes, then 128-bit lanes twice.
  static void Transpose(Vec r[16]) {
    Vec t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    // u[4g + a], lane k: element 4k + a of rows 4g .. 4g + 3.
    for (int g = 0; g < 16; g += 4) {
      u[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
      u[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xEE);
      u[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
      u[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int a = 0; a < 4; ++a) {
      t[a] = _mm512_shuffle_f32x4(u[a], u[4 + a], 0x88);       // lanes 0, 2 of rows 0-7
      t[4 + a] = _mm512_shuffle_f32x4(u[a], u[4 + a], 0xDD);   // lanes 1, 3
      t[8 + a] = _mm512_shuffle_f32x4(u[8 + a], u[12 + a], 0x88);
      t[12 + a] = _mm512_shuffle_f32x4(u[8 + a], u[12 + a], 0xDD);
    }
    for (int a = 0; a < 4; ++a) {
      r[a] = _mm512_shuffle_f32x4(t[a], t[8 + a], 0x88);
      r[8 + a] = _mm512_shuffle_f32x4(t[a], t[8 + a], 0xDD);
      r[4 + a] = _mm512_shuffle_f32x4(t[4 + a], t[12 + a], 0x88);
      r[12 + a] = _mm512_shuffle_f32x4(t[4 + a], t[12 + a], 0xDD);
    }
  }
};

}  // namespace

void RunAvx512(const Conv2DShape& s, const Task& t) { Run<Avx512>(s, t); }
bool Avx512Compiled() { return true; }

}  // namespace slimpack::runtime::kernels::depthwise_lanes

#else
namespace slimpack::runtime::kernels::depthwise_lanes {
void RunAvx512(const Conv2DShape&, const Task&) {}
bool Avx512Compiled() { return false; }
}  // namespace slimpack::runtime::kernels::depthwise_lanes
#endif
