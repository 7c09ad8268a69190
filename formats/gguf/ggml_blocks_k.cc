// The K-quant encoders (their decoders are ir/ggml_blocks.cc): 256-weight
// super-blocks whose sub-block scales (and mins) are themselves quantized
// against one or two f16 super-scales. Encoders
// follow ggml-quants.c's quantize_row_q{2..6}_K_ref (no importance) and
// quantize_row_q{2..6}_K_impl (importance); every scale that ggml stores as
// f16 is re-read from f16 before the codes are chosen, as ggml does.
//
// Super-block layouts (ggml-common.h), byte offsets:
//   q2_K (84):  16 B scale|min<<4 @0, 64 B 2-bit codes @16, f16 d @80, dmin @82
//   q3_K (110): 32 B high-bit mask @0, 64 B 2-bit codes @32, 12 B 6-bit
//               scales @96, f16 d @108
//   q4_K (144): f16 d @0, dmin @2, 12 B 6-bit scales+mins @4, 128 B nibbles @16
//   q5_K (176): d @0, dmin @2, scales+mins @4, 32 B high bits @16, nibbles @48
//   q6_K (210): 128 B low nibbles @0, 64 B high 2-bit pairs @128,
//               16 x i8 scales @192, f16 d @208
#include <algorithm>
#include <cmath>
#include <cstring>

#include "formats/gguf/ggml_blocks_internal.h"
#include "ir/ggml_blocks.h"

namespace slimpack::gguf::internal {
namespace {

constexpr int kN = static_cast<int>(kQK_K);  // 256 weights per super-block
constexpr int kQ2KBytes = 84, kQ3KBytes = 110, kQ4KBytes = 144, kQ5KBytes = 176,
              kQ6KBytes = 210;

int Clamp(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

float SumSquares(const float* x, int n) {
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += x[i] * x[i];
  return sum;
}

// ggml's imatrix weight: importance scaled by the weight's own magnitude
// over a floor sigma2 (a multiple of the super-block's mean square).
void ImportanceWeights(const float* qw, const float* x, int n, float sigma2, float* weight) {
  for (int l = 0; l < n; ++l) weight[l] = qw[l] * std::sqrt(sigma2 + x[l] * x[l]);
}

float Sum(const float* v, int n) {
  float sum = 0;
  for (int l = 0; l < n; ++l) sum += v[l];
  return sum;
}

// 2-bit codes of 256 weights in 64 bytes: byte 32*h + l holds weights
// 128*h + l + 32*k at bits 2k (q2_K, and the low bits of q3_K).
void Pack2Bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kN; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) |
                                           (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
  }
}

// Bit 2 of weight e goes to mask byte e % 32, bit e / 32; the low two bits
// are packed like q2_K's.
void PackQ3KCodes(const uint8_t* L, uint8_t* y) {
  uint8_t* hmask = y;
  std::fill(hmask, hmask + 32, 0);
  uint8_t low[kN];
  for (int e = 0; e < kN; ++e) {
    if (L[e] > 3) hmask[e % 32] = static_cast<uint8_t>(hmask[e % 32] | (1 << (e / 32)));
    low[e] = static_cast<uint8_t>(L[e] > 3 ? L[e] - 4 : L[e]);
  }
  Pack2Bit(low, y + 32);
}

// Nibble byte 32*k + l: weight 64*k + l (low), 64*k + 32 + l (high); q5_K
// puts their fifth bits in high-bit byte l at bits 2k and 2k + 1.
// (bits a template argument so each loop has no branch and vectorises.)
template <int kBits>
void PackQ45KCodesOf(const uint8_t* __restrict L, uint8_t* __restrict y) {
  uint8_t* qs = y + (kBits == 4 ? 16 : 48);
  uint8_t* qh = y + 16;
  if (kBits == 5) std::fill(qh, qh + 32, 0);
  for (int k = 0; k < 4; ++k) {
    for (int l = 0; l < 32; ++l) {
      const int lo = L[64 * k + l], hi = L[64 * k + 32 + l];
      qs[32 * k + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      if (kBits == 5) {
        qh[l] = static_cast<uint8_t>(qh[l] | ((lo >> 4) << (2 * k)) | ((hi >> 4) << (2 * k + 1)));
      }
    }
  }
}
void PackQ45KCodes(int bits, const uint8_t* L, uint8_t* y) {
  bits == 4 ? PackQ45KCodesOf<4>(L, y) : PackQ45KCodesOf<5>(L, y);
}

// Per 128 weights (h): low nibbles of weights l and l + 64 in byte l, of
// l + 32 and l + 96 in byte l + 32; their top two bits in qh byte l at
// bits 0, 2, 4, 6 for l, l + 32, l + 64, l + 96.
void PackQ6KCodes(const uint8_t* __restrict L, uint8_t* __restrict y) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* Lh = L + 128 * h;
    uint8_t* ql = y + 64 * h;
    uint8_t* qh = y + 128 + 32 * h;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
      qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
                                   ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
    }
  }
}

// --- q2_K: x = d*s*q - dmin*m, s and m 4-bit per 16 weights, q 2-bit.

// The sixteen 16-weight searches of `blocks` super-blocks run together
// (MakeQkxQuantsGroups): ggml's weights (|x|, or the importance-weighted
// ones with their per-sub-block sums in sw) and parameters for each path.
void SearchQ2K(const float* x, const float* qw, int64_t blocks, float* weights, float* scales,
               float* mins, uint8_t* L, float* sw) {
  for (int64_t b = 0; b < blocks; ++b) {
    const float* xb = x + kN * b;
    float* wb = weights + kN * b;
    if (qw) {
      const float sigma2 = SumSquares(xb, kN) / kN;
      for (int j = 0; j < 16; ++j) {
        ImportanceWeights(qw + kN * b + 16 * j, xb + 16 * j, 16, sigma2, wb + 16 * j);
        sw[16 * b + j] = Sum(wb + 16 * j, 16);
      }
    } else {
      for (int l = 0; l < kN; ++l) wb[l] = std::fabs(xb[l]);
    }
  }
  if (qw) {
    MakeQkxQuantsGroups(16 * blocks, 16, 3, x, weights, L, scales, mins, -0.9f, 0.05f, 36, false);
  } else {
    MakeQkxQuantsGroups(16 * blocks, 16, 3, x, weights, L, scales, mins, -0.5f, 0.1f, 15, true);
  }
}

// One super-block's scales, mins and codes from its searches' results.
void FinishQ2K(const float* x, bool weighted, const float* scales, const float* mins,
               uint8_t* L, const float* sw, uint8_t* y) {
  uint8_t* sc = y;
  if (weighted) {
    uint8_t Ls[16], Lm[16];
    PutF16(y + 80, MakeQpQuants(16, 15, scales, Ls, sw));
    PutF16(y + 82, MakeQpQuants(16, 15, mins, Lm, sw));
    for (int j = 0; j < 16; ++j) sc[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
  } else {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    std::fill(sc, sc + 16, 0);
    if (max_scale > 0) {
      const float iscale = 15.f / max_scale;
      for (int j = 0; j < 16; ++j) sc[j] = static_cast<uint8_t>(NearestInt(iscale * scales[j]));
    }
    PutF16(y + 80, max_scale > 0 ? max_scale / 15.f : 0.f);
    if (max_min > 0) {
      const float iscale = 15.f / max_min;
      for (int j = 0; j < 16; ++j) {
        const unsigned lm = static_cast<unsigned>(NearestInt(iscale * mins[j]));
        sc[j] = static_cast<uint8_t>(sc[j] | (lm << 4));
      }
    }
    PutF16(y + 82, max_min > 0 ? max_min / 15.f : 0.f);
  }
  const float d_all = GetF16(y + 80), m_all = GetF16(y + 82);
  float d[16], dm[16];
  for (int j = 0; j < 16; ++j) {
    d[j] = d_all * (sc[j] & 0xF);  // 0: codes stay as the search left them
    dm[j] = m_all * (sc[j] >> 4);
  }
  RoundToGrids(16, 16, x, d, dm, 0, 3, 0, L);
  Pack2Bit(L, y + 16);
}

// --- q3_K: x = d*(s - 32)*(q - 4), s 6-bit per 16 weights, q 3-bit.

// Sixteen 6-bit scales in 12 bytes: low nibbles of scale j in byte j % 8
// (j < 8 low half, else high half), top two bits in byte 8 + j % 4 at bit
// 2*(j/4).
void PackQ3Scales(const int* l6, uint8_t* s) {
  std::fill(s, s + 12, 0);
  for (int j = 0; j < 16; ++j) {
    s[j % 8] = static_cast<uint8_t>(s[j % 8] | ((l6[j] & 0xF) << (j < 8 ? 0 : 4)));
    s[8 + j % 4] = static_cast<uint8_t>(s[8 + j % 4] | ((l6[j] >> 4) << (2 * (j / 4))));
  }
}


// The sixteen 16-weight searches of `blocks` super-blocks run together:
// make_q3_quants without importance (MakeQ3QuantsGroups), make_qx_quants
// with ggml's importance weights (their per-sub-block sums in sw).
void SearchQ3K(const float* x, const float* qw, int64_t blocks, float* weights, float* scales,
               int8_t* L, float* sw) {
  if (!qw) return MakeQ3QuantsGroups(16 * blocks, 16, 4, x, L, scales);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* xb = x + kN * b;
    float* wb = weights + kN * b;
    const float sigma2 = 2 * SumSquares(xb, kN) / kN;
    for (int j = 0; j < 16; ++j) {
      ImportanceWeights(qw + kN * b + 16 * j, xb + 16 * j, 16, sigma2, wb + 16 * j);
      sw[16 * b + j] = Sum(wb + 16 * j, 16);
    }
  }
  MakeQxQuantsGroups(16 * blocks, 16, 4, x, weights, L, scales);
}

// One super-block's 6-bit scales and codes from its searches' results.
void FinishQ3K(const float* x, bool weighted, const float* scales, int8_t* L, const float* sw,
               uint8_t* y) {
  int l6[16];
  uint8_t* s = y + 96;
  if (weighted) {
    int8_t Ls[16];
    const float d_block = MakeQxQuants(16, 32, scales, sw, Ls);
    for (int j = 0; j < 16; ++j) l6[j] = Ls[j];
    PackQ3Scales(l6, s);
    PutF16(y + 108, d_block);
  } else {
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::fill(s, s + 12, 0);
    PutF16(y + 108, 0.f);
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        // ggml keeps the rounded scale in an int8_t before clamping.
        l6[j] = Clamp(static_cast<int8_t>(NearestInt(iscale * scales[j])), -32, 31) + 32;
      }
      PackQ3Scales(l6, s);
      PutF16(y + 108, 1 / iscale);
    }
  }
  const float d_all = GetF16(y + 108);
  // x / d as ggml divides; (x + 0) / d rounds to the same integer.
  float d[16];
  const float zero[16] = {};
  for (int j = 0; j < 16; ++j) d[j] = d_all * ir::GgmlQ3Scale(s, j);
  RoundToGrids(16, 16, x, d, zero, -4, 3, 4, reinterpret_cast<uint8_t*>(L));
  PackQ3KCodes(reinterpret_cast<const uint8_t*>(L), y);
}


// --- q4_K / q5_K: x = d*s*q - dmin*m, s and m 6-bit per 32 weights.

// Eight 6-bit (scale, min) pairs in 12 bytes (ggml's get_scale_min_k4):
// pairs 0-3 in the low six bits of bytes j and j + 4; pairs 4-7 keep their
// low nibbles in byte j + 4 and their top two bits in the high bits of bytes
// j - 4 (scale) and j (min). Bytes are written in ggml's order with its
// truncations, so out-of-range codes pack exactly as ggml packs them.
void PackScaleMinK4(const uint8_t* ls, const uint8_t* lm, uint8_t* s) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      s[j] = ls[j];
      s[j + 4] = lm[j];
    } else {
      s[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      s[j - 4] = static_cast<uint8_t>(s[j - 4] | ((ls[j] >> 4) << 6));
      s[j] = static_cast<uint8_t>(s[j] | ((lm[j] >> 4) << 6));
    }
  }
}


// q4_K (bits 4) and q5_K (bits 5) share everything but the code width and
// the search parameters of the unweighted path. The sub-block searches of
// `blocks` super-blocks run together (SearchQ45K: scales, mins, codes and,
// with importance, each sub-block's weight sum); FinishQ45K then quantizes
// one super-block's scales and codes from them.
void SearchQ45K(int bits, const float* x, const float* qw, int64_t blocks, float* weights,
                float* scales, float* mins, uint8_t* L, float* sw) {
  const int nmax = (1 << bits) - 1;
  // Without importance the search weighs by ggml's reference weights itself.
  for (int64_t b = 0; qw && b < blocks; ++b) {
    const float* xb = x + kN * b;
    float* wb = weights + kN * b;
    const float sigma2 = 2 * SumSquares(xb, kN) / kN;
    for (int j = 0; j < 8; ++j) {
      ImportanceWeights(qw + kN * b + 32 * j, xb + 32 * j, 32, sigma2, wb + 32 * j);
      sw[8 * b + j] = Sum(wb + 32 * j, 32);
    }
  }
  if (qw) {
    MakeQkxQuantsGroups(8 * blocks, 32, nmax, x, weights, L, scales, mins, -0.9f, 0.05f, 36,
                        false);
  } else {
    MakeQkxQuantsGroups(8 * blocks, 32, nmax, x, nullptr, L, scales, mins,
                        bits == 4 ? -1.f : -0.5f, 0.1f, bits == 4 ? 20 : 15, false);
  }
}

void FinishQ45K(int bits, const float* x, bool weighted, const float* scales, const float* mins,
                uint8_t* L, const float* sw, uint8_t* y) {
  const int nmax = (1 << bits) - 1;
  uint8_t ls[8], lm[8];
  if (weighted) {
    const float d_block = MakeQpQuants(8, 63, scales, ls, sw);
    const float m_block = MakeQpQuants(8, 63, mins, lm, sw);
    if (bits == 5) {  // ggml's q5_K clamps here, q4_K does not
      for (int j = 0; j < 8; ++j) {
        ls[j] = std::min<uint8_t>(63, ls[j]);
        lm[j] = std::min<uint8_t>(63, lm[j]);
      }
    }
    PutF16(y, d_block);
    PutF16(y + 2, m_block);
  } else {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; ++j) {
      ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_scale * scales[j])));
      lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_min * mins[j])));
    }
    PutF16(y, max_scale / 63.f);
    PutF16(y + 2, max_min / 63.f);
  }
  PackScaleMinK4(ls, lm, y + 4);
  const float d_all = GetF16(y), m_all = GetF16(y + 2);
  float d[8], dm[8];
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    ir::GgmlScaleMinK4(y + 4, j, &sc, &m);
    d[j] = d_all * sc;
    dm[j] = m_all * m;
  }
  RoundToGrids(8, 32, x, d, dm, 0, nmax, 0, L);
  PackQ45KCodes(bits, L, y);
}


// --- q6_K: x = d*s*(q - 32), s int8 per 16 weights, q 6-bit. The 16
// sub-block searches of many super-blocks run together (MakeQxQuantsGroups;
// ggml passes the raw importance there, no sigma2 term; null means x^2),
// FinishQ6K quantizes one super-block's scales and codes from them.

void FinishQ6K(const float* x, const float* scales, int8_t* L, uint8_t* y) {
  float max_scale = 0, max_abs_scale = 0;
  for (int j = 0; j < 16; ++j) {
    if (std::fabs(scales[j]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(y, 0, kQ6KBytes);
    return;
  }
  const float iscale = -128.f / max_scale;
  PutF16(y + 208, 1 / iscale);
  int8_t* sc = reinterpret_cast<int8_t*>(y + 192);
  for (int j = 0; j < 16; ++j) {
    sc[j] = static_cast<int8_t>(std::min(127, NearestInt(iscale * scales[j])));
  }
  const float d_all = GetF16(y + 208);
  // x / d as ggml divides; (x + 0) / d rounds to the same integer (only a
  // -0 becomes +0, and both round to 0).
  float d[16];
  const float zero[16] = {};
  for (int j = 0; j < 16; ++j) d[j] = d_all * sc[j];
  RoundToGrids(16, 16, x, d, zero, -32, 31, 32, reinterpret_cast<uint8_t*>(L));
  PackQ6KCodes(reinterpret_cast<const uint8_t*>(L), y);
}

// Super-blocks searched together: enough groups to fill the vector lanes
// many times over, little enough scratch for the stack.
constexpr int64_t kBatchBlocks = 16;

void QuantizeQ45KRow(int bits, const float* x, int64_t blocks, const float* qw, uint8_t* dst) {
  float weights[kBatchBlocks * kN], scales[kBatchBlocks * 8], mins[kBatchBlocks * 8],
      sw[kBatchBlocks * 8];
  uint8_t L[kBatchBlocks * kN];
  const int64_t bytes = bits == 4 ? kQ4KBytes : kQ5KBytes;
  for (int64_t b0 = 0; b0 < blocks; b0 += kBatchBlocks) {
    const int64_t count = std::min(kBatchBlocks, blocks - b0);
    const float* xb = x + kN * b0;
    const float* qb = qw ? qw + kN * b0 : nullptr;
    SearchQ45K(bits, xb, qb, count, weights, scales, mins, L, sw);
    for (int64_t b = 0; b < count; ++b) {
      FinishQ45K(bits, xb + kN * b, qw != nullptr, scales + 8 * b, mins + 8 * b, L + kN * b,
                 sw + 8 * b, dst + (b0 + b) * bytes);
    }
  }
}

void QuantizeQ2KRow(const float* x, int64_t blocks, const float* qw, uint8_t* dst) {
  float weights[kBatchBlocks * kN], scales[kBatchBlocks * 16], mins[kBatchBlocks * 16],
      sw[kBatchBlocks * 16];
  uint8_t L[kBatchBlocks * kN];
  for (int64_t b0 = 0; b0 < blocks; b0 += kBatchBlocks) {
    const int64_t count = std::min(kBatchBlocks, blocks - b0);
    const float* xb = x + kN * b0;
    SearchQ2K(xb, qw ? qw + kN * b0 : nullptr, count, weights, scales, mins, L, sw);
    for (int64_t b = 0; b < count; ++b) {
      FinishQ2K(xb + kN * b, qw != nullptr, scales + 16 * b, mins + 16 * b, L + kN * b,
                sw + 16 * b, dst + (b0 + b) * kQ2KBytes);
    }
  }
}

void QuantizeQ3KRow(const float* x, int64_t blocks, const float* qw, uint8_t* dst) {
  float weights[kBatchBlocks * kN], scales[kBatchBlocks * 16], sw[kBatchBlocks * 16];
  int8_t L[kBatchBlocks * kN];
  for (int64_t b0 = 0; b0 < blocks; b0 += kBatchBlocks) {
    const int64_t count = std::min(kBatchBlocks, blocks - b0);
    const float* xb = x + kN * b0;
    SearchQ3K(xb, qw ? qw + kN * b0 : nullptr, count, weights, scales, L, sw);
    for (int64_t b = 0; b < count; ++b) {
      FinishQ3K(xb + kN * b, qw != nullptr, scales + 16 * b, L + kN * b, sw + 16 * b,
                dst + (b0 + b) * kQ3KBytes);
    }
  }
}

void QuantizeQ6KRow(const float* x, int64_t blocks, const float* qw, uint8_t* dst) {
  float scales[kBatchBlocks * 16];
  int8_t L[kBatchBlocks * kN];
  for (int64_t b0 = 0; b0 < blocks; b0 += kBatchBlocks) {
    const int64_t count = std::min(kBatchBlocks, blocks - b0);
    const float* xb = x + kN * b0;
    MakeQxQuantsGroups(16 * count, 16, 32, xb, qw ? qw + kN * b0 : nullptr, L, scales);
    for (int64_t b = 0; b < count; ++b) {
      FinishQ6K(xb + kN * b, scales + 16 * b, L + kN * b, dst + (b0 + b) * kQ6KBytes);
    }
  }
}

}  // namespace

void QuantizeKRow(TensorType type, const float* x, int64_t n, const float* importance,
                  uint8_t* dst) {
  switch (type) {
    case TensorType::kQ4_K: return QuantizeQ45KRow(4, x, n / kN, importance, dst);
    case TensorType::kQ5_K: return QuantizeQ45KRow(5, x, n / kN, importance, dst);
    case TensorType::kQ6_K: return QuantizeQ6KRow(x, n / kN, importance, dst);
    case TensorType::kQ2_K: return QuantizeQ2KRow(x, n / kN, importance, dst);
    default: return QuantizeQ3KRow(x, n / kN, importance, dst);
  }
}


void KBlockGrids(TensorType type, const uint8_t* b, WeightGrid* g) {
  switch (type) {
    case TensorType::kQ2_K: {
      const float d = GetF16(b + 80), min = GetF16(b + 82);
      for (int e = 0; e < kN; ++e) {
        const int s = e / 16;
        g[e] = {d * (b[s] & 0xF), -(min * (b[s] >> 4)), 0, 0, 3};
      }
      return;
    }
    case TensorType::kQ3_K: {
      const float d = GetF16(b + 108);
      for (int e = 0; e < kN; ++e) g[e] = {d * ir::GgmlQ3Scale(b + 96, e / 16), 0.f, 4, 0, 7};
      return;
    }
    case TensorType::kQ4_K:
    case TensorType::kQ5_K: {
      const float d = GetF16(b), min = GetF16(b + 2);
      const int qmax = type == TensorType::kQ4_K ? 15 : 31;
      for (int e = 0; e < kN; ++e) {
        int sc, m;
        ir::GgmlScaleMinK4(b + 4, e / 32, &sc, &m);
        g[e] = {d * sc, -(min * m), 0, 0, qmax};
      }
      return;
    }
    default: {  // kQ6_K
      const float d = GetF16(b + 208);
      const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
      for (int e = 0; e < kN; ++e) g[e] = {d * sc[e / 16], 0.f, 32, 0, 63};
      return;
    }
  }
}

void SetKBlockCodes(TensorType type, const uint8_t* L, uint8_t* b) {
  switch (type) {
    case TensorType::kQ2_K: Pack2Bit(L, b + 16); return;
    case TensorType::kQ3_K: PackQ3KCodes(L, b); return;
    case TensorType::kQ4_K: PackQ45KCodes(4, L, b); return;
    case TensorType::kQ5_K: PackQ45KCodes(5, L, b); return;
    default: PackQ6KCodes(L, b); return;  // kQ6_K
  }
}

}  // namespace slimpack::gguf::internal
