// BlockGrids / SetBlockCodes (ggml_grid.h): the 32-weight block types here,
// the K-quants' layouts in ggml_blocks_k.cc.
#include "formats/gguf/ggml_grid.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "formats/gguf/ggml_blocks_internal.h"

namespace slimpack::gguf {
namespace {

using internal::GetF16;

bool IsK(TensorType type) {
  return type == TensorType::kQ2_K || type == TensorType::kQ3_K || type == TensorType::kQ4_K ||
         type == TensorType::kQ5_K || type == TensorType::kQ6_K;
}

absl::Status CheckQuantized(TensorType type, const char* what) {
  if (internal::IsLegacy(type) || IsK(type)) return absl::OkStatus();
  TypeTraits traits{};
  const std::string name = GetTypeTraits(static_cast<uint32_t>(type), &traits)
                               ? std::string(traits.name)
                               : absl::StrCat("type ", static_cast<uint32_t>(type));
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": ", name, " is not a block-quantized ggml type (q4_0 .. q8_0, q2_K .. q6_K)"));
}

// q8_0's codes are int8 in [-127, 127] as ggml's encoder writes them; as a
// WeightGrid they are q - 128 with q in [1, 255].
constexpr int kQ8Zero = 128;

}  // namespace

int NearestCode(const WeightGrid& g, float v) {
  if (g.scale == 0) return g.qmin;
  const double q = std::nearbyint((static_cast<double>(v) - g.offset) / g.scale) + g.zero;
  if (!(q > g.qmin)) return g.qmin;  // also NaN: never cast it
  return q > g.qmax ? g.qmax : static_cast<int>(q);
}

absl::Status BlockGrids(TensorType type, const uint8_t* block, WeightGrid* grids) {
  if (absl::Status s = CheckQuantized(type, "BlockGrids"); !s.ok()) return s;
  if (IsK(type)) {
    internal::KBlockGrids(type, block, grids);
    return absl::OkStatus();
  }
  const internal::LegacyLayout layout = internal::LayoutOf(type);
  const float d = GetF16(block);
  WeightGrid g{d, 0.f, 0, 0, (1 << layout.bits) - 1};
  if (type == TensorType::kQ8_0) {
    g = {d, 0.f, kQ8Zero, 1, 255};
  } else if (layout.has_min) {
    g.offset = GetF16(block + 2);
  } else {
    g.zero = 1 << (layout.bits - 1);
  }
  for (int j = 0; j < 32; ++j) grids[j] = g;
  return absl::OkStatus();
}

absl::Status SetBlockCodes(TensorType type, const uint8_t* codes, uint8_t* block) {
  if (absl::Status s = CheckQuantized(type, "SetBlockCodes"); !s.ok()) return s;
  const int n = static_cast<int>(BlockSize(type));
  // Every weight of a type shares one code range except q8_0's lower end.
  WeightGrid probe[kQK_K];
  if (absl::Status s = BlockGrids(type, block, probe); !s.ok()) return s;
  for (int j = 0; j < n; ++j) {
    if (codes[j] < probe[j].qmin || codes[j] > probe[j].qmax) {
      TypeTraits traits{};
      GetTypeTraits(static_cast<uint32_t>(type), &traits);
      return absl::InvalidArgumentError(absl::StrCat(
          "SetBlockCodes(", std::string(traits.name), "): code ", static_cast<int>(codes[j]),
          " at index ", j, " is outside [", probe[j].qmin, ", ", probe[j].qmax, "]"));
    }
  }
  if (IsK(type)) {
    internal::SetKBlockCodes(type, codes, block);
  } else if (type == TensorType::kQ8_0) {
    for (int j = 0; j < 32; ++j) block[2 + j] = static_cast<uint8_t>(codes[j] - kQ8Zero);
  } else {
    internal::PackCodes(internal::LayoutOf(type), codes, block);
  }
  return absl::OkStatus();
}

}  // namespace slimpack::gguf
