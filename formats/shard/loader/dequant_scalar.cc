// The scalar reference kernels: the definition every vectorised kernel is
// tested against, element by element and bit for bit.
#include "formats/shard/loader/dequant_kernels.h"

namespace slimpack::loader::internal {
namespace {

inline int32_t Load8(const uint8_t* q, size_t i, bool is_signed) {
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(q[i]))
                   : static_cast<int32_t>(q[i]);
}

void Bcast8Scalar(const uint8_t* q, size_t n, bool is_signed, int32_t zp,
                  float s, float* out) {
  for (size_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(Load8(q, i, is_signed) - zp) * s;
  }
}

void Vec8Scalar(const uint8_t* q, size_t n, bool is_signed, const int16_t* zp,
                const float* s, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const int32_t z = zp ? zp[i] : 0;
    out[i] = static_cast<float>(Load8(q, i, is_signed) - z) * s[i];
  }
}

void Bcast4Scalar(const uint8_t* packed, uint64_t first, size_t n,
                  bool is_signed, int32_t zp, float s, float* out) {
  for (size_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(Nibble(packed, first + i, is_signed) - zp) * s;
  }
}

void Vec4Scalar(const uint8_t* packed, uint64_t first, size_t n, bool is_signed,
                const int16_t* zp, const float* s, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const int32_t z = zp ? zp[i] : 0;
    out[i] = static_cast<float>(Nibble(packed, first + i, is_signed) - z) * s[i];
  }
}

}  // namespace

const DequantKernels& ScalarKernels() {
  static const DequantKernels k = {"scalar",     Bcast8Scalar, Vec8Scalar,
                                   Bcast4Scalar, Vec4Scalar,   DequantGgmlBlocks};
  return k;
}

const DequantKernels& BestKernels() {
#if defined(__x86_64__)
  static const DequantKernels& best =
      Avx2Kernels() != nullptr ? *Avx2Kernels() : ScalarKernels();
  return best;
#elif defined(__aarch64__)
  return NeonKernels();
#else
  return ScalarKernels();
#endif
}

}  // namespace slimpack::loader::internal
