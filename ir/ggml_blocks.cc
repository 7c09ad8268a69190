// The decoders keep ggml's float operation order (this file is compiled
// without FP contraction: q*d + m is two roundings in ggml, never an FMA).
// Block layouts, byte offsets within a block (ggml-common.h):
//   q4_0 (18):  f16 d @0, 16 B nibbles @2       q4_1 (20): d @0, f16 m @2, nibbles @4
//   q5_0 (22):  d @0, u32 high bits @2, nibbles @6
//   q5_1 (24):  d @0, m @2, high bits @4, nibbles @8
//   q8_0 (34):  d @0, 32 x i8 @2
//   q2_K (84):  16 B scale|min<<4 @0, 64 B 2-bit codes @16, f16 d @80, dmin @82
//   q3_K (110): 32 B high-bit mask @0, 64 B 2-bit codes @32, 12 B 6-bit
//               scales @96, f16 d @108
//   q4_K (144): f16 d @0, dmin @2, 12 B 6-bit scales+mins @4, 128 B nibbles @16
//   q5_K (176): d @0, dmin @2, scales+mins @4, 32 B high bits @16, nibbles @48
//   q6_K (210): 128 B low nibbles @0, 64 B high 2-bit pairs @128,
//               16 x i8 scales @192, f16 d @208
// In the 32-weight types nibble byte j holds weight j (low) and j + 16
// (high), and bit j of the high-bit word is weight j's fifth bit.
#include "ir/ggml_blocks.h"

#include <cctype>

#include "ir/float_convert.h"
#include "support/checked_math.h"

namespace slimpack::ir {
namespace {

struct Entry {
  GgmlType type;
  std::string_view name;
  GgmlGeometry geometry;
};
constexpr Entry kTypes[] = {
    {GgmlType::kQ4_0, "q4_0", {32, 18, 4, false}},   {GgmlType::kQ4_1, "q4_1", {32, 20, 4, true}},
    {GgmlType::kQ5_0, "q5_0", {32, 22, 5, false}},   {GgmlType::kQ5_1, "q5_1", {32, 24, 5, true}},
    {GgmlType::kQ8_0, "q8_0", {32, 34, 8, false}},   {GgmlType::kQ2_K, "q2_k", {256, 84, 2, true}},
    {GgmlType::kQ3_K, "q3_k", {256, 110, 3, false}}, {GgmlType::kQ4_K, "q4_k", {256, 144, 4, true}},
    {GgmlType::kQ5_K, "q5_k", {256, 176, 5, true}},  {GgmlType::kQ6_K, "q6_k", {256, 210, 6, false}},
};

const Entry* Find(GgmlType type) {
  for (const Entry& e : kTypes) {
    if (e.type == type) return &e;
  }
  return nullptr;
}

float HalfAt(const uint8_t* p) {
  return F16ToF32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

// The nibble types with the layout fixed at compile time, so the
// per-weight loop is branch-free and vectorizes (src and y never alias).
template <bool kAffine, bool kFifthBit>
void DequantizeNibbleBlocks(const uint8_t* __restrict src, uint64_t blocks, int block_bytes,
                            float* __restrict y) {
  constexpr int kZero = kAffine ? 0 : (kFifthBit ? 16 : 8);
  constexpr int kHighAt = kAffine ? 4 : 2;
  constexpr int kNibblesAt = (kAffine ? 4 : 2) + (kFifthBit ? 4 : 0);
  for (uint64_t ib = 0; ib < blocks; ++ib, y += 32) {
    const uint8_t* block = src + ib * block_bytes;
    const uint8_t* qs = block + kNibblesAt;
    const float d = HalfAt(block);
    const float m = kAffine ? HalfAt(block + 2) : 0.0f;
    uint32_t qh = 0;
    if (kFifthBit) {
      for (int b = 0; b < 4; ++b) qh |= static_cast<uint32_t>(block[kHighAt + b]) << (8 * b);
    }
    for (int j = 0; j < 16; ++j) {
      const int lo = ((qs[j] & 0x0F) | (kFifthBit ? ((qh >> j) & 1) << 4 : 0)) - kZero;
      const int hi = ((qs[j] >> 4) | (kFifthBit ? ((qh >> (j + 16)) & 1) << 4 : 0)) - kZero;
      y[j] = kAffine ? lo * d + m : lo * d;
      y[j + 16] = kAffine ? hi * d + m : hi * d;
    }
  }
}

void DequantizeQ8_0(const uint8_t* __restrict src, uint64_t blocks, float* __restrict y) {
  for (uint64_t ib = 0; ib < blocks; ++ib, y += 32) {
    const uint8_t* block = src + ib * 34;
    const float d = HalfAt(block);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<int8_t>(block[2 + j]) * d;
  }
}

// The K types loop per sub-block, as ggml's decoders do.
void DequantizeQ2K(const uint8_t* __restrict b, float* __restrict y) {
  const float d = HalfAt(b + 80), min = HalfAt(b + 82);
  for (int s = 0; s < 16; ++s, y += 16) {  // sub-block s: weights 16*s..
    const uint8_t* q = b + 16 + 32 * (s / 8) + 16 * (s % 2);
    const int shift = 2 * ((s % 8) / 2);
    const float dl = d * (b[s] & 0xF), ml = min * (b[s] >> 4);
    for (int l = 0; l < 16; ++l) y[l] = dl * ((q[l] >> shift) & 3) - ml;
  }
}

void DequantizeQ3K(const uint8_t* __restrict b, float* __restrict y) {
  const float d_all = HalfAt(b + 108);
  for (int s = 0; s < 16; ++s, y += 16) {
    const uint8_t* q = b + 32 + 32 * (s / 8) + 16 * (s % 2);
    const uint8_t* hm = b + 16 * (s % 2);
    const int shift = 2 * ((s % 8) / 2), bit = s / 2;  // weight e: mask bit e / 32
    const float dl = d_all * GgmlQ3Scale(b + 96, s);
    for (int l = 0; l < 16; ++l) {
      y[l] = dl * (((q[l] >> shift) & 3) - (((hm[l] >> bit) & 1) ? 0 : 4));
    }
  }
}

template <int kBits>
void DequantizeQ45K(const uint8_t* __restrict b, float* __restrict y) {
  const float d = HalfAt(b), min = HalfAt(b + 2);
  const uint8_t* qs = b + (kBits == 4 ? 16 : 48);
  const uint8_t* qh = b + 16;
  for (int j = 0; j < 8; ++j, y += 32) {  // sub-block j: nibble half j % 2 of bytes 32*(j/2)..
    int sc, m;
    GgmlScaleMinK4(b + 4, j, &sc, &m);
    const float d1 = d * sc, m1 = min * m;
    const uint8_t* q = qs + 32 * (j / 2);
    const int shift = 4 * (j % 2);
    for (int l = 0; l < 32; ++l) {
      const int high = kBits == 5 ? ((qh[l] >> j) & 1) << 4 : 0;  // q5_K: bit j of byte l
      y[l] = d1 * (((q[l] >> shift) & 0xF) + high) - m1;
    }
  }
}

void DequantizeQ6K(const uint8_t* __restrict b, float* __restrict y) {
  const float d = HalfAt(b + 208);
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  for (int s = 0; s < 16; ++s, y += 16) {
    const int h = s / 8, quarter = (s % 8) / 2;  // weights 128*h + 32*quarter + l
    const uint8_t* ql = b + 64 * h + 32 * (quarter % 2) + 16 * (s % 2);
    const uint8_t* qh = b + 128 + 32 * h + 16 * (s % 2);
    const int low_shift = 4 * (quarter / 2), high_shift = 2 * quarter;
    for (int l = 0; l < 16; ++l) {
      const int q = (((ql[l] >> low_shift) & 0xF) | (((qh[l] >> high_shift) & 3) << 4)) - 32;
      y[l] = d * sc[s] * q;
    }
  }
}

}  // namespace

std::optional<GgmlGeometry> GgmlTypeGeometry(GgmlType type) {
  const Entry* e = Find(type);
  if (e == nullptr) return std::nullopt;
  return e->geometry;
}

std::string_view GgmlTypeName(GgmlType type) {
  const Entry* e = Find(type);
  return e ? e->name : "?";
}

std::optional<GgmlType> GgmlTypeFromName(std::string_view name) {
  for (const Entry& e : kTypes) {
    if (e.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(name[i])) == e.name[i];
    }
    if (same) return e.type;
  }
  return std::nullopt;
}

std::string GgmlTypeNames() {
  std::string out;
  for (const Entry& e : kTypes) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

std::optional<uint64_t> GgmlRowBytes(GgmlType type, uint64_t n) {
  const Entry* e = Find(type);
  if (e == nullptr || n % e->geometry.block_size != 0) return std::nullopt;
  return CheckedMul(n / e->geometry.block_size, e->geometry.block_bytes);
}

void DequantizeGgmlRow(GgmlType type, const uint8_t* src, uint64_t n, float* dst) {
  const GgmlGeometry g = *GgmlTypeGeometry(type);
  const uint64_t blocks = n / g.block_size;
  switch (type) {
    case GgmlType::kQ4_0:
      return DequantizeNibbleBlocks<false, false>(src, blocks, g.block_bytes, dst);
    case GgmlType::kQ4_1:
      return DequantizeNibbleBlocks<true, false>(src, blocks, g.block_bytes, dst);
    case GgmlType::kQ5_0:
      return DequantizeNibbleBlocks<false, true>(src, blocks, g.block_bytes, dst);
    case GgmlType::kQ5_1:
      return DequantizeNibbleBlocks<true, true>(src, blocks, g.block_bytes, dst);
    case GgmlType::kQ8_0: return DequantizeQ8_0(src, blocks, dst);
    default: break;
  }
  for (uint64_t i = 0; i < blocks; ++i) {
    const uint8_t* b = src + i * g.block_bytes;
    float* y = dst + i * g.block_size;
    switch (type) {
      case GgmlType::kQ2_K: DequantizeQ2K(b, y); break;
      case GgmlType::kQ3_K: DequantizeQ3K(b, y); break;
      case GgmlType::kQ4_K: DequantizeQ45K<4>(b, y); break;
      case GgmlType::kQ5_K: DequantizeQ45K<5>(b, y); break;
      default: DequantizeQ6K(b, y); break;
    }
  }
}

int GgmlQ3Scale(const uint8_t* s, int j) {
  const int low = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  return (low | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

void GgmlScaleMinK4(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

}  // namespace slimpack::ir
