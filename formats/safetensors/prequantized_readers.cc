// The packed-linear readers (prequantized_grid.h; the packings are written
// out in scripts/fixtures/make_prequantized_checkpoints.py).
#include "formats/safetensors/prequantized_grid.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "ir/float_convert.h"
#include "ir/shape.h"
#include "support/status_macros.h"

namespace slimpack::safetensors::prequant_internal {

std::string Where(const ir::Tensor& t) {
  return (t.provenance.file.empty() ? std::string() : t.provenance.file + ": ") + "tensor '" +
         t.name + "'";
}

namespace {

std::string DimsText(const std::vector<int64_t>& d) { return ir::Shape::FromDims(d).ToString(); }

// A packed linear's tensor, checked for dtype, rank and byte size.
absl::Status CheckTensor(const ir::Tensor& t, std::initializer_list<ir::DType> dtypes,
                         size_t rank) {
  if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end()) {
    std::string want;
    for (ir::DType d : dtypes) want += (want.empty() ? "" : " or ") + std::string(ir::DTypeName(d));
    return absl::InvalidArgumentError(Where(t) + ": dtype " + std::string(ir::DTypeName(t.dtype)) +
                                      ", expected " + want);
  }
  if (t.dims.size() != rank) {
    return absl::InvalidArgumentError(Where(t) + ": shape " + DimsText(t.dims) + " has rank " +
                                      std::to_string(t.dims.size()) + ", expected " +
                                      std::to_string(rank));
  }
  for (int64_t d : t.dims) {
    if (d < 1) {
      return absl::InvalidArgumentError(Where(t) + ": shape " + DimsText(t.dims) +
                                        " has an empty dimension");
    }
  }
  ASSIGN_OR_RETURN(uint64_t bytes, t.ExpectedBytes());
  if (bytes != t.data.size()) {
    return absl::InvalidArgumentError(Where(t) + ": " + DimsText(t.dims) + " needs " +
                                      std::to_string(bytes) + " bytes, found " +
                                      std::to_string(t.data.size()));
  }
  return absl::OkStatus();
}

absl::Status ShapeIs(const ir::Tensor& t, const std::vector<int64_t>& want,
                     const std::string& because) {
  if (t.dims == want) return absl::OkStatus();
  return absl::InvalidArgumentError(Where(t) + ": shape " + DimsText(t.dims) + ", expected " +
                                    DimsText(want) + " (" + because + ")");
}

uint32_t Word(const ir::Tensor& t, uint64_t i) {
  uint32_t w;
  std::memcpy(&w, t.data.data() + 4 * i, 4);
  return w;
}

// Value k of a GPTQ bit stream: the int32 words at word(0), word(1), ...
// (one column of qweight, one row of qzeros) read as one little-endian bit
// string, value k at bits [bits*k, bits*k + bits). For 2, 4 and 8 bits this
// is field k % (32/bits) of word k / (32/bits); 3-bit values straddle words
// (AutoGPTQ packs 32 of them into 3 words).
template <typename WordAt>
uint32_t StreamField(const WordAt& word, int bits, int64_t k) {
  const int64_t bit = static_cast<int64_t>(bits) * k;
  const int64_t w = bit / 32;
  const int shift = static_cast<int>(bit % 32);
  uint64_t v = word(w) >> shift;
  if (shift + bits > 32) v |= static_cast<uint64_t>(word(w + 1)) << (32 - shift);
  return static_cast<uint32_t>(v) & ((1u << bits) - 1);
}


float ScaleAt(const ir::Tensor& t, uint64_t i) {
  if (t.dtype == ir::DType::kF32) {
    float v;
    std::memcpy(&v, t.data.data() + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, t.data.data() + 2 * i, 2);
  return t.dtype == ir::DType::kF16 ? ir::F16ToF32(h) : ir::Bf16ToF32(h);
}

absl::Status CheckScales(const ir::Tensor& scales, const Grid& g) {
  for (int64_t k = 0; k < g.groups; ++k) {
    for (int64_t o = 0; o < g.out; ++o) {
      const float s = g.scale[static_cast<size_t>(k * g.out + o)];
      if (s == 0.0f || !std::isfinite(s)) {
        return absl::InvalidArgumentError(Where(scales) + ": scale of group " +
                                          std::to_string(k) + ", output " + std::to_string(o) +
                                          " is " + std::to_string(s) +
                                          " (scales must be finite and nonzero)");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Grid> ReadGptq(const PrequantConfig& c, const PackedLinear& p) {
  const ir::Tensor& qw = *p.qweight;
  const ir::Tensor& qz = *p.qzeros;
  const ir::Tensor& sc = *p.scales;
  RETURN_IF_ERROR(CheckTensor(qw, {ir::DType::kI32}, 2));
  RETURN_IF_ERROR(CheckTensor(qz, {ir::DType::kI32}, 2));
  RETURN_IF_ERROR(CheckTensor(sc, {ir::DType::kF16, ir::DType::kBF16, ir::DType::kF32}, 2));
  Grid g;
  g.bits = c.bits;
  const uint32_t maxq = (1u << c.bits) - 1;
  const std::string bits = "bits " + std::to_string(c.bits) + " in " + c.source;
  // qweight holds in * bits / 32 rows of words: in = rows * 32 / bits.
  if ((qw.dims[0] * 32) % c.bits != 0) {
    return absl::InvalidArgumentError(Where(qw) + ": " + std::to_string(qw.dims[0]) +
                                      " rows of int32 words do not hold a whole number of " +
                                      std::to_string(c.bits) + "-bit values (" + bits + ")");
  }
  g.out = qw.dims[1];
  g.in = qw.dims[0] * 32 / c.bits;
  // -1, or any size beyond the inputs: one group of all `in` rows.
  g.group = c.group_size == -1 ? g.in : std::min(c.group_size, g.in);
  g.groups = g.in / g.group + (g.in % g.group != 0);  // no overflow for any group_size
  RETURN_IF_ERROR(ShapeIs(sc, {g.groups, g.out},
                          "[ceil(in / group_size), out] for in " + std::to_string(g.in) +
                              " = qweight rows x 32 / bits (" + bits + "), group_size " +
                              std::to_string(c.group_size)));
  if ((g.out * c.bits) % 32 != 0) {
    return absl::InvalidArgumentError(Where(qw) + ": " + std::to_string(g.out) +
                                      " output columns do not fill the int32 words of qzeros (" +
                                      bits + ")");
  }
  const int64_t zero_words = g.out * c.bits / 32;
  RETURN_IF_ERROR(ShapeIs(qz, {g.groups, zero_words}, "[groups, out * bits / 32] for " + bits));
  const size_t n = static_cast<size_t>(g.in * g.out);
  g.code.resize(n);
  for (int64_t o = 0; o < g.out; ++o) {
    auto column = [&](int64_t r) { return Word(qw, static_cast<uint64_t>(r * g.out + o)); };
    for (int64_t i = 0; i < g.in; ++i) {
      g.code[static_cast<size_t>(i * g.out + o)] =
          static_cast<uint8_t>(StreamField(column, c.bits, i));
    }
  }
  g.zero.resize(static_cast<size_t>(g.groups * g.out));
  g.scale.resize(g.zero.size());
  for (int64_t k = 0; k < g.groups; ++k) {
    auto row = [&](int64_t w) { return Word(qz, static_cast<uint64_t>(k * zero_words + w)); };
    for (int64_t o = 0; o < g.out; ++o) {
      const uint32_t field = StreamField(row, c.bits, o);
      if (c.zeros_minus_one && field == maxq) {
        return absl::InvalidArgumentError(
            Where(qz) + ": zero field of group " + std::to_string(k) + ", output " +
            std::to_string(o) + " is " + std::to_string(field) +
            "; checkpoint_format gptq (v1) stores zero - 1, so the zero point would be " +
            std::to_string(maxq + 1) + ", outside " + std::to_string(c.bits) +
            "-bit codes (a v1 writer's zero point 0 overflowed)");
      }
      const size_t at = static_cast<size_t>(k * g.out + o);
      g.zero[at] = static_cast<uint8_t>(field + (c.zeros_minus_one ? 1 : 0));
      g.scale[at] = ScaleAt(sc, at);
    }
  }
  RETURN_IF_ERROR(CheckScales(sc, g));
  g.group_of.resize(static_cast<size_t>(g.in));
  if (p.g_idx == nullptr) {
    if (c.desc_act) {
      return absl::InvalidArgumentError(Where(qw) + ": " + c.source +
                                        " has desc_act true but the checkpoint has no '" +
                                        p.prefix + ".g_idx'");
    }
    for (int64_t i = 0; i < g.in; ++i) g.group_of[static_cast<size_t>(i)] = i / g.group;
    return g;
  }
  const ir::Tensor& gi = *p.g_idx;
  RETURN_IF_ERROR(CheckTensor(gi, {ir::DType::kI32, ir::DType::kI64}, 1));
  RETURN_IF_ERROR(ShapeIs(gi, {g.in}, "one group per input row; qweight implies in " +
                                          std::to_string(g.in) + " for " + bits));
  for (int64_t i = 0; i < g.in; ++i) {
    const int64_t v = ir::IndexElementAt(gi, static_cast<uint64_t>(i));
    if (v < 0 || v >= g.groups) {
      return absl::InvalidArgumentError(Where(gi) + ": g_idx[" + std::to_string(i) + "] = " +
                                        std::to_string(v) + " is outside [0, " +
                                        std::to_string(g.groups) + ") groups");
    }
    g.group_of[static_cast<size_t>(i)] = v;
  }
  return g;
}

// AutoAWQ's GEMM order: field k of a word holds column 8c + kAwqOrder[k];
// kAwqField[j] is the field of column 8c + j.
constexpr int kAwqField[8] = {0, 4, 1, 5, 2, 6, 3, 7};

namespace {

// The three AWQ tensors (GEMM and GEMV alike) checked for dtype and rank.
absl::Status CheckAwqTensors(const PackedLinear& p) {
  RETURN_IF_ERROR(CheckTensor(*p.qweight, {ir::DType::kI32}, 2));
  RETURN_IF_ERROR(CheckTensor(*p.qzeros, {ir::DType::kI32}, 2));
  return CheckTensor(*p.scales, {ir::DType::kF16, ir::DType::kBF16, ir::DType::kF32}, 2);
}

// The group size over `in` inputs (-1: all of them), which must divide it.
absl::StatusOr<int64_t> AwqGroup(const PrequantConfig& c, const ir::Tensor& qw, int64_t in) {
  const int64_t group = c.group_size == -1 ? in : c.group_size;
  if (in % group != 0) {
    return absl::InvalidArgumentError(Where(qw) + ": " + std::to_string(in) +
                                      " input rows are not a multiple of group_size " +
                                      std::to_string(group) + " (" + c.source + ")");
  }
  return group;
}

// AutoAWQ's GEMV layout, transposed against GEMM: qweight [out, in / 8]
// (field k of word c holds input 8c + k, in order), qzeros [out, W] (field
// k of word c: group 8c + k), scales [out, 8W] (the first in / group_size
// columns real, the rest padding), where W is AutoAWQ's
// calculate_zeros_width: ceil(ceil(groups / 8) / m) * m with m = 4, 2, 1
// for group sizes 32, 64, >= 128.
absl::StatusOr<Grid> ReadAwqGemv(const PrequantConfig& c, const PackedLinear& p) {
  RETURN_IF_ERROR(CheckAwqTensors(p));
  const ir::Tensor& qw = *p.qweight;
  const ir::Tensor& qz = *p.qzeros;
  const ir::Tensor& sc = *p.scales;
  Grid g;
  g.bits = 4;
  g.out = qw.dims[0];
  g.in = qw.dims[1] * 8;
  ASSIGN_OR_RETURN(g.group, AwqGroup(c, qw, g.in));
  if (g.group != 32 && g.group != 64 && g.group < 128) {
    return absl::InvalidArgumentError(Where(qw) + ": " + std::to_string(g.in) + " inputs make " +
                                      "group_size -1 a group of " + std::to_string(g.group) +
                                      ", which AutoAWQ's GEMV layout cannot hold (32, 64 or "
                                      ">= 128; " + c.source + ")");
  }
  g.groups = g.in / g.group;
  const int64_t m = g.group == 32 ? 4 : g.group == 64 ? 2 : 1;
  const int64_t width = ((g.groups + 7) / 8 + m - 1) / m * m;
  const std::string why = "AWQ GEMV, bits 4, group_size " + std::to_string(g.group) + " in " +
                          c.source;
  RETURN_IF_ERROR(ShapeIs(qz, {g.out, width}, "[out, zeros width " + std::to_string(width) +
                                                  "], " + why));
  RETURN_IF_ERROR(ShapeIs(sc, {g.out, 8 * width}, "[out, 8 x zeros width], " + why));
  g.code.resize(static_cast<size_t>(g.in * g.out));
  for (int64_t o = 0; o < g.out; ++o) {
    for (int64_t i = 0; i < g.in; ++i) {
      const uint32_t w = Word(qw, static_cast<uint64_t>(o * (g.in / 8) + i / 8));
      g.code[static_cast<size_t>(i * g.out + o)] = static_cast<uint8_t>((w >> (4 * (i % 8))) & 15u);
    }
  }
  g.zero.resize(static_cast<size_t>(g.groups * g.out));
  g.scale.resize(g.zero.size());
  for (int64_t o = 0; o < g.out; ++o) {
    for (int64_t k = 0; k < g.groups; ++k) {
      const uint32_t w = Word(qz, static_cast<uint64_t>(o * width + k / 8));
      const size_t at = static_cast<size_t>(k * g.out + o);
      g.zero[at] = static_cast<uint8_t>((w >> (4 * (k % 8))) & 15u);
      g.scale[at] = ScaleAt(sc, static_cast<uint64_t>(o * 8 * width + k));
    }
  }
  RETURN_IF_ERROR(CheckScales(sc, g));
  g.group_of.resize(static_cast<size_t>(g.in));
  for (int64_t i = 0; i < g.in; ++i) g.group_of[static_cast<size_t>(i)] = i / g.group;
  return g;
}

}  // namespace

absl::StatusOr<Grid> ReadAwq(const PrequantConfig& c, const PackedLinear& p) {
  if (c.awq_gemv) return ReadAwqGemv(c, p);
  RETURN_IF_ERROR(CheckAwqTensors(p));
  const ir::Tensor& qw = *p.qweight;
  const ir::Tensor& qz = *p.qzeros;
  const ir::Tensor& sc = *p.scales;
  Grid g;
  g.bits = 4;
  g.in = qw.dims[0];
  g.out = sc.dims[1];
  ASSIGN_OR_RETURN(g.group, AwqGroup(c, qw, g.in));
  g.groups = g.in / g.group;
  if (g.out % 8 != 0) {
    return absl::InvalidArgumentError(Where(sc) + ": " + std::to_string(g.out) +
                                      " output columns do not fill int32 words of 8 4-bit codes");
  }
  const std::string why = "AWQ GEMM, bits 4, group_size " + std::to_string(g.group) + " in " +
                          c.source;
  RETURN_IF_ERROR(ShapeIs(sc, {g.groups, g.out}, "[in / group_size, out], " + why));
  RETURN_IF_ERROR(ShapeIs(qw, {g.in, g.out / 8}, "[in, out / 8], " + why));
  RETURN_IF_ERROR(ShapeIs(qz, {g.groups, g.out / 8}, "[in / group_size, out / 8], " + why));
  g.code.resize(static_cast<size_t>(g.in * g.out));
  for (int64_t i = 0; i < g.in; ++i) {
    for (int64_t o = 0; o < g.out; ++o) {
      const uint32_t w = Word(qw, static_cast<uint64_t>(i * (g.out / 8) + o / 8));
      g.code[static_cast<size_t>(i * g.out + o)] =
          static_cast<uint8_t>((w >> (4 * kAwqField[o % 8])) & 15u);
    }
  }
  g.zero.resize(static_cast<size_t>(g.groups * g.out));
  g.scale.resize(g.zero.size());
  for (int64_t k = 0; k < g.groups; ++k) {
    for (int64_t o = 0; o < g.out; ++o) {
      const uint32_t w = Word(qz, static_cast<uint64_t>(k * (g.out / 8) + o / 8));
      const size_t at = static_cast<size_t>(k * g.out + o);
      g.zero[at] = static_cast<uint8_t>((w >> (4 * kAwqField[o % 8])) & 15u);
      g.scale[at] = ScaleAt(sc, at);
    }
  }
  RETURN_IF_ERROR(CheckScales(sc, g));
  g.group_of.resize(static_cast<size_t>(g.in));
  for (int64_t i = 0; i < g.in; ++i) g.group_of[static_cast<size_t>(i)] = i / g.group;
  return g;
}

// compressed-tensors pack-quantized: weight_packed [out, ceil(in / per)]
// along the inputs, weight_zero_point [ceil(out / per), groups] along the
// outputs, value k of a word at bits [bits*k, ...), each stored as the
// signed value plus 2^(bits-1); weight_scale [out, groups].
absl::StatusOr<Grid> ReadCompressed(const PrequantConfig& c, const PackedLinear& p) {
  const ir::Tensor& qw = *p.qweight;
  const ir::Tensor& sc = *p.scales;
  RETURN_IF_ERROR(CheckTensor(qw, {ir::DType::kI32}, 2));
  RETURN_IF_ERROR(CheckTensor(sc, {ir::DType::kF16, ir::DType::kBF16, ir::DType::kF32}, 2));
  if (p.shape == nullptr) {
    return absl::InvalidArgumentError(Where(qw) + " has no '" + p.prefix +
                                      ".weight_shape' beside it (" + c.source + ")");
  }
  const ir::Tensor& shape = *p.shape;
  RETURN_IF_ERROR(CheckTensor(shape, {ir::DType::kI32, ir::DType::kI64}, 1));
  RETURN_IF_ERROR(ShapeIs(shape, {2}, "[out, in]"));
  Grid g;
  g.bits = c.bits;
  const int64_t per = 32 / c.bits;
  const uint32_t maxq = (1u << c.bits) - 1;
  const uint32_t offset = 1u << (c.bits - 1);
  g.out = ir::IndexElementAt(shape, 0);
  g.in = ir::IndexElementAt(shape, 1);
  if (g.out < 1 || g.in < 1 || g.out > (int64_t{1} << 30) || g.in > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(Where(shape) + ": weight_shape [" + std::to_string(g.out) +
                                      ", " + std::to_string(g.in) + "] is out of range");
  }
  // -1, or any size beyond the inputs: one group of all `in` rows.
  g.group = c.group_size == -1 ? g.in : std::min(c.group_size, g.in);
  g.groups = g.in / g.group + (g.in % g.group != 0);  // no overflow for any group_size
  const std::string bits = "num_bits " + std::to_string(c.bits) + " in " + c.source;
  RETURN_IF_ERROR(ShapeIs(qw, {g.out, (g.in + per - 1) / per},
                          "[out, ceil(in * bits / 32)] for weight_shape [" +
                              std::to_string(g.out) + ", " + std::to_string(g.in) + "], " + bits));
  RETURN_IF_ERROR(ShapeIs(sc, {g.out, g.groups},
                          "[out, ceil(in / group_size)], group_size " +
                              std::to_string(c.group_size) + " in " + c.source));
  g.code.resize(static_cast<size_t>(g.in * g.out));
  for (int64_t o = 0; o < g.out; ++o) {
    for (int64_t i = 0; i < g.in; ++i) {
      const uint32_t w = Word(qw, static_cast<uint64_t>(o * ((g.in + per - 1) / per) + i / per));
      g.code[static_cast<size_t>(i * g.out + o)] =
          static_cast<uint8_t>((w >> (c.bits * (i % per))) & maxq);
    }
  }
  g.zero.assign(static_cast<size_t>(g.groups * g.out), static_cast<uint8_t>(offset));
  g.scale.resize(g.zero.size());
  for (int64_t k = 0; k < g.groups; ++k) {
    for (int64_t o = 0; o < g.out; ++o) {
      g.scale[static_cast<size_t>(k * g.out + o)] = ScaleAt(sc, static_cast<uint64_t>(o * g.groups + k));
    }
  }
  if (c.sym) {
    g.signed_codes = true;
  } else {
    if (p.qzeros == nullptr) {
      return absl::InvalidArgumentError(Where(qw) + " has no '" + p.prefix +
                                        ".weight_zero_point' beside it (" + c.source +
                                        " says symmetric false)");
    }
    const ir::Tensor& qz = *p.qzeros;
    RETURN_IF_ERROR(CheckTensor(qz, {ir::DType::kI32}, 2));
    RETURN_IF_ERROR(ShapeIs(qz, {(g.out + per - 1) / per, g.groups},
                            "[ceil(out * bits / 32), groups], " + bits));
    for (int64_t o = 0; o < g.out; ++o) {
      for (int64_t k = 0; k < g.groups; ++k) {
        const uint32_t w = Word(qz, static_cast<uint64_t>((o / per) * g.groups + k));
        g.zero[static_cast<size_t>(k * g.out + o)] =
            static_cast<uint8_t>((w >> (c.bits * (o % per))) & maxq);
      }
    }
  }
  RETURN_IF_ERROR(CheckScales(sc, g));
  g.group_of.resize(static_cast<size_t>(g.in));
  if (p.g_idx == nullptr) {
    for (int64_t i = 0; i < g.in; ++i) g.group_of[static_cast<size_t>(i)] = i / g.group;
    return g;
  }
  const ir::Tensor& gi = *p.g_idx;
  RETURN_IF_ERROR(CheckTensor(gi, {ir::DType::kI32, ir::DType::kI64}, 1));
  RETURN_IF_ERROR(ShapeIs(gi, {g.in}, "one group per input row"));
  for (int64_t i = 0; i < g.in; ++i) {
    const int64_t v = ir::IndexElementAt(gi, static_cast<uint64_t>(i));
    if (v < 0 || v >= g.groups) {
      return absl::InvalidArgumentError(Where(gi) + ": weight_g_idx[" + std::to_string(i) +
                                        "] = " + std::to_string(v) + " is outside [0, " +
                                        std::to_string(g.groups) + ") groups");
    }
    g.group_of[static_cast<size_t>(i)] = v;
  }
  return g;
}

}  // namespace slimpack::safetensors::prequant_internal
