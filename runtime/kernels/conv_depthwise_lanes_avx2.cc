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

  // 16 positions of 8 byte rows as 16 pixel vectors. Rows l and l + 4
  // share a register (the upper half inserted from memory, not a shuffle);
  // two rounds of in-lane interleaves leave each position's 8 bytes as a
  // dword in each half (channels 0-3 low, 4-7 high), and one in-lane byte
  // shuffle per position widens them to int32 lanes. 24 shuffles for 16
  // vectors where widening and Transpose8x8 take 64.
  static constexpr int kByteBlock = 16;
  template <typename T>
  static void BytesTransposed(const T* src, int64_t stride, Vec zp, Vec v[16]) {
    __m256i r[4];
    for (int l = 0; l < 4; ++l) {
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + l * stride));
      const __m128i hi =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (l + 4) * stride));
      r[l] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    }
    const __m256i a0 = _mm256_unpacklo_epi8(r[0], r[1]), a1 = _mm256_unpackhi_epi8(r[0], r[1]);
    const __m256i a2 = _mm256_unpacklo_epi8(r[2], r[3]), a3 = _mm256_unpackhi_epi8(r[2], r[3]);
    // q[g] dword d: position 4g + d, channels 0-3 (low half) / 4-7 (high).
    const __m256i q[4] = {_mm256_unpacklo_epi16(a0, a2), _mm256_unpackhi_epi16(a0, a2),
                          _mm256_unpacklo_epi16(a1, a3), _mm256_unpackhi_epi16(a1, a3)};
    for (int p = 0; p < 16; ++p) {
      const char d = static_cast<char>(4 * (p & 3));
      __m256i w;
      if constexpr (std::is_same_v<T, uint8_t>) {  // zero-extended
        const __m256i idx = _mm256_setr_epi8(
            d, -1, -1, -1, d + 1, -1, -1, -1, d + 2, -1, -1, -1, d + 3, -1, -1, -1,
            d, -1, -1, -1, d + 1, -1, -1, -1, d + 2, -1, -1, -1, d + 3, -1, -1, -1);
        w = _mm256_shuffle_epi8(q[p >> 2], idx);
      } else {  // into the top byte, then sign-extended by the shift
        const __m256i idx = _mm256_setr_epi8(
            -1, -1, -1, d, -1, -1, -1, d + 1, -1, -1, -1, d + 2, -1, -1, -1, d + 3,
            -1, -1, -1, d, -1, -1, -1, d + 1, -1, -1, -1, d + 2, -1, -1, -1, d + 3);
        w = _mm256_srai_epi32(_mm256_shuffle_epi8(q[p >> 2], idx), 24);
      }
      v[p] = _mm256_sub_ps(_mm256_cvtepi32_ps(w), zp);
    }
  }

  // The low bytes of 8 int32 pixel vectors, one row of 8 per channel:
  // packed to words and bytes (every lane is in the byte type's range, so
  // the saturating packs keep it; the mask keeps the low byte of a negative
  // one), each half's 4 x 4 (position, channel) bytes transposed by one
  // in-lane shuffle, then paired. 12 shuffles where Transpose8x8 and 8
  // StoreBytes take 48.
  static void StoreBytesTransposed(const Vec v[8], uint8_t* y, int64_t stride) {
    const __m256i m = _mm256_set1_epi16(0xFF);
    auto words = [&](int i) {
      return _mm256_and_si256(
          _mm256_packs_epi32(_mm256_castps_si256(v[i]), _mm256_castps_si256(v[i + 1])), m);
    };
    // Half h of b0: positions 0-3 x channels 4h .. 4h + 3; b1: positions 4-7.
    const __m256i b0 = _mm256_packus_epi16(words(0), words(2));
    const __m256i b1 = _mm256_packus_epi16(words(4), words(6));
    const __m256i by_channel = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7,
                                                11, 15, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10,
                                                14, 3, 7, 11, 15);
    const __m256i c0 = _mm256_shuffle_epi8(b0, by_channel);
    const __m256i c1 = _mm256_shuffle_epi8(b1, by_channel);
    // Half h of e0: channels 4h, 4h + 1 (8 bytes each); e1: 4h + 2, 4h + 3.
    const __m256i e0 = _mm256_unpacklo_epi32(c0, c1), e1 = _mm256_unpackhi_epi32(c0, c1);
    const __m128i rows[4] = {_mm256_castsi256_si128(e0), _mm256_castsi256_si128(e1),
                             _mm256_extracti128_si256(e0, 1), _mm256_extracti128_si256(e1, 1)};
    for (int i = 0; i < 4; ++i) {
      uint8_t* p = y + 2 * i * stride;
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p), rows[i]);
      _mm_storeh_pd(reinterpret_cast<double*>(p + stride), _mm_castsi128_pd(rows[i]));
    }
  }
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
