// The channels-in-lanes depthwise kernel (conv_depthwise_lanes.h) for AVX2
// + FMA: 8 channels a vector. Compiled with -mavx2 -mfma
// (runtime/CMakeLists.txt) and called only after support::CpuAllows.
#include "runtime/kernels/conv_depthwise_lanes.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "runtime/kernels/conv_activation_simd.h"
#include "runtime/kernels/conv_depthwise_lanes_impl.h"
#include "runtime/kernels/transpose_avx2.h"

namespace slimpack::runtime::kernels::depthwise_lanes {
namespace {

struct Avx2 {
  static constexpr int kLanes = 8;
  using Vec = __m256;
  static Vec Zero() { return _mm256_setzero_ps(); }
  static Vec Set(float f) { return _mm256_set1_ps(f); }
  static Vec Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  // A row's last partial vector through a stack copy, not VMASKMOVPS:
  // qemu-x86_64's TCG faults on its masked-off lanes past a page (CPUs do
  // not), and the cross-CPU test runs this kernel there.
  static Vec LoadN(const float* p, int64_t n) {
    alignas(32) float tail[8] = {};
    for (int64_t i = 0; i < n; ++i) tail[i] = p[i];
    return _mm256_load_ps(tail);
  }
  static void StoreN(float* p, Vec v, int64_t n) {
    alignas(32) float tail[8];
    _mm256_store_ps(tail, v);
    for (int64_t i = 0; i < n; ++i) p[i] = tail[i];
  }
  static Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec Activate(Vec v, ConvActivation act) { return Activate8(v, act); }
  using VecI = __m256i;
  static VecI Ints(const int32_t* p, int64_t n) {  // a stack copy, as LoadN
    alignas(32) int32_t tail[8] = {};
    for (int64_t i = 0; i < n; ++i) tail[i] = p[i];
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(tail));
  }
  static VecI SetInt(int32_t i) { return _mm256_set1_epi32(i); }
  // As int8dot::RequantizeAvx2, after ExactSumsToInts' truncation.
  static Vec Requantize(Vec sum, VecI bias, Vec mult, Vec flo, Vec fhi, VecI zp) {
    const __m256i a = _mm256_add_epi32(_mm256_cvttps_epi32(sum), bias);
    __m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(a), mult);
    x = _mm256_and_ps(x, _mm256_cmp_ps(x, x, _CMP_ORD_Q));
    x = _mm256_min_ps(_mm256_max_ps(x, flo), fhi);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_cvtps_epi32(x), zp));
  }
  // The low byte of each int32 lane (every lane is within the byte type's
  // range, so exact): four from each 128-bit half, then the halves joined.
  static void StoreBytes(uint8_t* p, Vec v, int64_t n) {
    const __m256i low = _mm256_shuffle_epi8(
        _mm256_castps_si256(v), _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                 -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1,
                                                 -1, -1, -1, -1, -1, -1));
    const __m128i b = _mm_unpacklo_epi32(_mm256_castsi256_si128(low),
                                         _mm256_extracti128_si256(low, 1));
    if (n == 8) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p), b);
      return;
    }
    alignas(16) uint8_t bytes[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(bytes), b);
    for (int64_t i = 0; i < n; ++i) p[i] = bytes[i];
  }
  static Vec Add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec Sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  // kLanes bytes as floats (exact).
  static Vec Bytes(const uint8_t* p) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
  }
  static Vec Bytes(const int8_t* p) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
  }

  static void Transpose(Vec r[8]) { Transpose8x8(r); }
};

}  // namespace

void RunAvx2(const Conv2DShape& s, const Task& t) { Run<Avx2>(s, t); }
bool Avx2Compiled() { return true; }

}  // namespace slimpack::runtime::kernels::depthwise_lanes

#else
namespace slimpack::runtime::kernels::depthwise_lanes {
void RunAvx2(const Conv2DShape&, const Task&) {}
bool Avx2Compiled() { return false; }
}  // namespace slimpack::runtime::kernels::depthwise_lanes
#endif
