// Unpacking GPTQ / AWQ packed linears into slimpack quantized weights with
// the checkpoint's codes (prequantized.h; the packings are written out in
// scripts/fixtures/make_prequantized_checkpoints.py).
#include "formats/safetensors/prequantized.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "hf/weight_roles.h"
#include "ir/float_convert.h"
#include "ir/shape.h"
#include "support/status_macros.h"

namespace slimpack::safetensors {
namespace {

std::string Where(const ir::Tensor& t) {
  return (t.provenance.file.empty() ? std::string() : t.provenance.file + ": ") + "tensor '" +
         t.name + "'";
}

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

int64_t IndexAt(const ir::Tensor& t, uint64_t i) {
  if (t.dtype == ir::DType::kI64) {
    int64_t v;
    std::memcpy(&v, t.data.data() + 8 * i, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, t.data.data() + 4 * i, 4);
  return v;
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

// The grid of one linear in checkpoint order: code(i, o) for input row i
// and output column o, zero(g, o), scale(g, o).
struct Grid {
  int64_t in = 0, out = 0, groups = 0, group = 0;
  int bits = 0;
  std::vector<uint8_t> code;   // [in, out]
  std::vector<uint8_t> zero;   // [groups, out]
  std::vector<float> scale;    // [groups, out]
  std::vector<int64_t> group_of;  // [in]
  // compressed-tensors symmetric: the codes are signed (stored - 2^(bits-1))
  // and there is no zero point.
  bool signed_codes = false;
};

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
    const int64_t v = IndexAt(gi, static_cast<uint64_t>(i));
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

absl::StatusOr<Grid> ReadAwq(const PrequantConfig& c, const PackedLinear& p) {
  const ir::Tensor& qw = *p.qweight;
  const ir::Tensor& qz = *p.qzeros;
  const ir::Tensor& sc = *p.scales;
  RETURN_IF_ERROR(CheckTensor(qw, {ir::DType::kI32}, 2));
  RETURN_IF_ERROR(CheckTensor(qz, {ir::DType::kI32}, 2));
  RETURN_IF_ERROR(CheckTensor(sc, {ir::DType::kF16, ir::DType::kBF16, ir::DType::kF32}, 2));
  Grid g;
  g.bits = 4;
  g.in = qw.dims[0];
  g.out = sc.dims[1];
  g.group = c.group_size;
  if (g.in % g.group != 0) {
    return absl::InvalidArgumentError(Where(qw) + ": " + std::to_string(g.in) +
                                      " input rows are not a multiple of group_size " +
                                      std::to_string(g.group) + " (" + c.source + ")");
  }
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
  g.out = IndexAt(shape, 0);
  g.in = IndexAt(shape, 1);
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
    const int64_t v = IndexAt(gi, static_cast<uint64_t>(i));
    if (v < 0 || v >= g.groups) {
      return absl::InvalidArgumentError(Where(gi) + ": weight_g_idx[" + std::to_string(i) +
                                        "] = " + std::to_string(v) + " is outside [0, " +
                                        std::to_string(g.groups) + ") groups");
    }
    g.group_of[static_cast<size_t>(i)] = v;
  }
  return g;
}

// The input order that makes groups contiguous: empty when the grid already
// is (group_of[i] == i / group), else rows stably sorted by group, checked
// so that position j lands in group j / group.
absl::StatusOr<std::vector<int64_t>> ContiguousOrder(const Grid& g, const PackedLinear& p) {
  bool trivial = true;
  for (int64_t i = 0; i < g.in && trivial; ++i) {
    trivial = g.group_of[static_cast<size_t>(i)] == i / g.group;
  }
  if (trivial) return std::vector<int64_t>();
  std::vector<int64_t> perm(static_cast<size_t>(g.in));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    return g.group_of[static_cast<size_t>(a)] < g.group_of[static_cast<size_t>(b)];
  });
  std::vector<int64_t> count(static_cast<size_t>(g.groups), 0);
  for (int64_t v : g.group_of) ++count[static_cast<size_t>(v)];
  for (int64_t k = 0; k < g.groups; ++k) {
    const int64_t want = std::min(g.group, g.in - k * g.group);
    if (count[static_cast<size_t>(k)] != want) {
      return absl::InvalidArgumentError(
          Where(*p.g_idx) + ": g_idx puts " + std::to_string(count[static_cast<size_t>(k)]) +
          " input rows in group " + std::to_string(k) + ", expected " + std::to_string(want) +
          " (group_size " + std::to_string(g.group) +
          "): act-order groups must have group_size rows to be made contiguous");
    }
  }
  return perm;
}

ir::Tensor Companion(const ir::Tensor& from, std::string name, ir::DType dtype,
                     std::vector<int64_t> dims, std::vector<uint8_t> bytes) {
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.provenance = from.provenance;
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

// Packs values (< 16) two per byte, element 0 in the low nibble.
std::vector<uint8_t> Nibbles(const std::vector<uint8_t>& v) {
  std::vector<uint8_t> out((v.size() + 1) / 2, 0);
  for (size_t i = 0; i < v.size(); ++i) {
    out[i / 2] = static_cast<uint8_t>(out[i / 2] | (v[i] << ((i & 1) ? 4 : 0)));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<ir::Tensor>> UnpackLinear(const PrequantConfig& c,
                                                     const PackedLinear& p) {
  const bool ct = c.method == PrequantMethod::kCompressedTensors;
  if (p.qweight == nullptr || p.scales == nullptr || (!ct && p.qzeros == nullptr)) {
    return absl::InternalError("UnpackLinear: '" + p.prefix + "' lacks a packed tensor");
  }
  Grid g;
  if (c.method == PrequantMethod::kGptq) {
    ASSIGN_OR_RETURN(g, ReadGptq(c, p));
  } else if (c.method == PrequantMethod::kAwq) {
    ASSIGN_OR_RETURN(g, ReadAwq(c, p));
  } else {
    ASSIGN_OR_RETURN(g, ReadCompressed(c, p));
  }
  const bool int8 = g.bits == 8;
  if (int8 && g.groups != 1) {
    return absl::UnimplementedError(
        Where(*p.qweight) + ": bits 8 with group_size " + std::to_string(c.group_size) + " (" +
        std::to_string(g.groups) + " groups over " + std::to_string(g.in) + " input rows, " +
        c.source + ") is not supported: slimpack's 8-bit layout is int8_per_channel (supported: "
        "group_size -1 or the input size)");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> perm, ContiguousOrder(g, p));
  const std::string w_name = p.prefix + ".weight";
  // Codes in the HF [out, in] order, input rows through perm; signed codes
  // as two's complement bytes (nibbles once packed).
  const uint8_t bias = g.signed_codes ? static_cast<uint8_t>(1u << (g.bits - 1)) : 0;
  std::vector<uint8_t> codes(static_cast<size_t>(g.in * g.out));
  for (int64_t o = 0; o < g.out; ++o) {
    for (int64_t j = 0; j < g.in; ++j) {
      const int64_t i = perm.empty() ? j : perm[static_cast<size_t>(j)];
      uint8_t v = static_cast<uint8_t>(g.code[static_cast<size_t>(i * g.out + o)] - bias);
      if (!int8) v &= 0x0F;
      codes[static_cast<size_t>(o * g.in + j)] = v;
    }
  }
  // Scales and zero points [out, groups] ([out] for int8 per channel).
  std::vector<float> scale(static_cast<size_t>(g.out * g.groups));
  std::vector<uint8_t> zero(scale.size());
  for (int64_t o = 0; o < g.out; ++o) {
    for (int64_t k = 0; k < g.groups; ++k) {
      scale[static_cast<size_t>(o * g.groups + k)] = g.scale[static_cast<size_t>(k * g.out + o)];
      zero[static_cast<size_t>(o * g.groups + k)] = g.zero[static_cast<size_t>(k * g.out + o)];
    }
  }
  const ir::DType dtype = g.signed_codes ? (int8 ? ir::DType::kI8 : ir::DType::kI4)
                                         : (int8 ? ir::DType::kU8 : ir::DType::kU4);
  const std::vector<int64_t> param_dims =
      int8 ? std::vector<int64_t>{g.out} : std::vector<int64_t>{g.out, g.groups};
  std::vector<ir::Tensor> out;
  ir::Tensor w = Companion(*p.qweight, w_name, dtype, {g.out, g.in},
                           int8 ? std::move(codes) : Nibbles(codes));
  w.quant.kind = int8 ? ir::QuantKind::kInt8PerChannel : ir::QuantKind::kInt4GroupWise;
  w.quant.axis = int8 ? 0 : 1;
  w.quant.group_size = int8 ? 0 : g.group;
  w.quant.scale = w_name + ".scale";
  if (!g.signed_codes) w.quant.zero_point = w_name + ".zero_point";
  w.quant.algorithm = c.method == PrequantMethod::kGptq  ? "gptq-checkpoint"
                      : c.method == PrequantMethod::kAwq ? "awq-checkpoint"
                                                         : "compressed-tensors-checkpoint";
  std::vector<uint8_t> scale_bytes(scale.size() * sizeof(float));
  std::memcpy(scale_bytes.data(), scale.data(), scale_bytes.size());
  out.push_back(Companion(*p.scales, w.quant.scale, ir::DType::kF32, param_dims,
                          std::move(scale_bytes)));
  if (!g.signed_codes) {
    out.push_back(Companion(p.qzeros ? *p.qzeros : *p.qweight, w.quant.zero_point, dtype,
                            param_dims, int8 ? std::move(zero) : Nibbles(zero)));
  }
  if (!perm.empty()) {
    std::vector<uint8_t> bytes(perm.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), perm.data(), bytes.size());
    out.push_back(Companion(*p.g_idx, w_name + hf::kInputPermSuffix, ir::DType::kI64, {g.in},
                            std::move(bytes)));
  }
  out.insert(out.begin(), std::move(w));
  return out;
}

absl::Status ImportPrequantized(const PrequantConfig& c, std::vector<ir::Tensor>& tensors) {
  const bool ct = c.method == PrequantMethod::kCompressedTensors;
  // The packed tensors' suffixes: the first finds a linear.
  const std::vector<std::string> parts =
      ct ? std::vector<std::string>{".weight_packed", ".weight_zero_point", ".weight_scale",
                                    ".weight_g_idx", ".weight_shape"}
         : std::vector<std::string>{".qweight", ".qzeros", ".scales", ".g_idx"};
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tensors.size(); ++i) index[tensors[i].name] = i;
  auto find = [&](const std::string& name) -> const ir::Tensor* {
    auto it = index.find(name);
    return it == index.end() ? nullptr : &tensors[it->second];
  };
  std::set<std::string> consumed;
  std::vector<ir::Tensor> added;
  for (const ir::Tensor& t : tensors) {
    if (!absl::EndsWith(t.name, parts[0])) continue;
    PackedLinear p;
    p.prefix = t.name.substr(0, t.name.size() - parts[0].size());
    p.qweight = &t;
    p.qzeros = find(p.prefix + parts[1]);
    p.scales = find(p.prefix + parts[2]);
    p.g_idx = c.method == PrequantMethod::kAwq ? nullptr : find(p.prefix + parts[3]);
    if (ct) p.shape = find(p.prefix + parts[4]);
    std::vector<size_t> required = {2};
    if (!ct) required.push_back(1);
    for (size_t r : required) {
      if (find(p.prefix + parts[r]) == nullptr) {
        return absl::InvalidArgumentError(Where(t) + " has no '" + p.prefix + parts[r] +
                                          "' beside it (" + c.source + ")");
      }
    }
    if (const ir::Tensor* dup = find(p.prefix + ".weight")) {
      return absl::InvalidArgumentError(Where(*dup) + " is also packed as '" + t.name +
                                        "': a linear is either float or packed");
    }
    ASSIGN_OR_RETURN(std::vector<ir::Tensor> unpacked, UnpackLinear(c, p));
    for (size_t k = 0; k < parts.size(); ++k) {
      if (c.method == PrequantMethod::kAwq && k == 3) continue;  // AWQ has no g_idx
      if (ct && c.sym && k == 1) continue;  // a symmetric scheme has no zero point
      consumed.insert(p.prefix + parts[k]);
    }
    for (ir::Tensor& u : unpacked) added.push_back(std::move(u));
  }
  if (added.empty()) {
    return absl::InvalidArgumentError(c.source + " says the weights are quantized but no tensor "
                                      "is named '<module>" + parts[0] + "'");
  }
  std::vector<ir::Tensor> kept;
  for (ir::Tensor& t : tensors) {
    if (consumed.count(t.name)) continue;
    for (const std::string& part : parts) {
      if (absl::EndsWith(t.name, part)) {
        return absl::InvalidArgumentError(
            Where(t) + " is not read: no '" + t.name.substr(0, t.name.size() - part.size()) +
            parts[0] + "' beside it, or " + c.source + " gives it no meaning");
      }
    }
    kept.push_back(std::move(t));
  }
  for (ir::Tensor& t : added) kept.push_back(std::move(t));
  tensors = std::move(kept);
  return absl::OkStatus();
}

}  // namespace slimpack::safetensors
