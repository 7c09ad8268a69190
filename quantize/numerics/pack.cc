// QuantizedMatrix -> shard tensors (layouts of formats/shard/spec.md).
#include "quantize/numerics/pack.h"

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/float_convert.h"
#include "support/status_macros.h"

namespace slimpack::quant {
namespace {

// Centred codes (in stored-element order) -> payload bytes of `dtype`.
std::vector<uint8_t> Encode(const std::vector<int8_t>& codes, ir::DType dtype,
                            int bits) {
  const int32_t offset = 1 << (bits - 1);
  const bool is_unsigned = dtype == ir::DType::kU4 || dtype == ir::DType::kU8;
  auto element = [&](size_t i) -> uint8_t {
    const int32_t v = is_unsigned ? codes[i] + offset : codes[i];
    return static_cast<uint8_t>(v);  // two's complement for i8/i4
  };
  if (dtype == ir::DType::kI8 || dtype == ir::DType::kU8) {
    // i8: the codes' own bytes (two's complement), copied without zeroing
    // first; u8: then biased in place, 16 at a time. The byte loop through
    // element() was 11 % of an int8 conversion (GCC 12 -O2 left it scalar)
    // and its zeroed vector another 5 %.
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(codes.data());
    std::vector<uint8_t> out(bytes, bytes + codes.size());
    if (is_unsigned) {
      uint8_t* o = out.data();
      size_t i = 0;
#if defined(__GNUC__)
      typedef uint8_t U8x16 __attribute__((vector_size(16), aligned(1)));
      for (; i + 16 <= out.size(); i += 16) {
        U8x16 v;
        std::memcpy(&v, o + i, 16);
        v += static_cast<uint8_t>(offset);
        std::memcpy(o + i, &v, 16);
      }
#endif
      for (; i < out.size(); ++i) o[i] = element(i);
    }
    return out;
  }
  // Two codes per byte, low nibble first. 32 codes at a time in 16-byte
  // vectors (GCC's vector extensions: SSE2 on x86-64, NEON on arm64): each
  // code's nibble biased, then every 16-bit lane (the code pair 2k, 2k+1,
  // little-endian) folded to lo | hi << 4 in its low byte, and the low
  // bytes gathered. GCC 12's -O2 left the plain pair loop scalar, 18 % of
  // an int4 conversion (perf, the peer input).
  const size_t pairs = codes.size() / 2;
  std::vector<uint8_t> out((codes.size() + 1) / 2);
  const uint8_t bias = is_unsigned ? static_cast<uint8_t>(offset) : 0;
  const int8_t* c = codes.data();
  uint8_t* o = out.data();
  size_t p = 0;
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  typedef uint8_t U8x16 __attribute__((vector_size(16), aligned(1)));
  typedef uint16_t U16x8 __attribute__((vector_size(16), aligned(1)));
  for (; p + 16 <= pairs; p += 16) {
    U8x16 a, b;
    std::memcpy(&a, c + 2 * p, 16);
    std::memcpy(&b, c + 2 * p + 16, 16);
    a = (a + bias) & 0x0F;
    b = (b + bias) & 0x0F;
    U16x8 wa = reinterpret_cast<U16x8>(a), wb = reinterpret_cast<U16x8>(b);
    wa |= wa >> 4;
    wb |= wb >> 4;
    const U8x16 packed = __builtin_shufflevector(reinterpret_cast<U8x16>(wa),
                                                 reinterpret_cast<U8x16>(wb), 0, 2, 4, 6, 8,
                                                 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    std::memcpy(o + p, &packed, 16);
  }
#endif
  for (; p < pairs; ++p) {
    o[p] = static_cast<uint8_t>((element(2 * p) & 0x0F) | (element(2 * p + 1) << 4));
  }
  if (codes.size() % 2) out.back() = element(codes.size() - 1) & 0x0F;
  return out;
}

// Reorders a row-major [a, b] array to [b, a].
template <typename T>
std::vector<T> Transpose(const std::vector<T>& v, int64_t a, int64_t b) {
  std::vector<T> out(v.size());
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) out[j * a + i] = v[i * b + j];
  }
  return out;
}

ir::Tensor Companion(const ir::Tensor& original, std::string name) {
  ir::Tensor t;
  t.name = std::move(name);
  t.provenance = original.provenance;
  t.role = original.role;
  t.layer = original.layer;
  return t;
}

}  // namespace

absl::StatusOr<PackedTensors> PackedShapes(const Scheme& scheme, int64_t rows, int64_t cols,
                                           const ir::Tensor& original, bool transposed,
                                           std::string algorithm) {
  const std::string where = absl::StrCat("pack '", original.name, "'");
  if (original.name.empty()) {
    return absl::InvalidArgumentError("pack: original tensor has no name");
  }
  const bool int8 = scheme.bits > 4;
  // An 8-bit scheme whose groups are shorter than a row is int8_groupwise.
  const bool grouped = !int8 || (scheme.group_size > 0 && scheme.group_size < cols);
  // Rank 2 [rows, cols] (or [cols, rows] transposed); int8 per-channel
  // also takes [rows, d1, d2, ...] with d1*d2*... == cols (Conv weights
  // [O, I, kh, kw]: one scale per output channel along axis 0).
  const std::vector<int64_t> want =
      transposed ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{rows, cols};
  bool dims_ok = original.dims == want;
  if (!dims_ok && !transposed && !grouped &&
      original.dims.size() > 2 && original.dims[0] == rows) {
    int64_t inner = 1;
    for (size_t i = 1; i < original.dims.size() && inner > 0; ++i) {
      const int64_t d = original.dims[i];
      // inner <= cols and d <= cols keep the product far from overflow.
      inner = (d < 1 || d > cols) ? -1 : inner * d;
      if (inner > cols) inner = -1;
    }
    dims_ok = inner == cols;
  }
  if (!dims_ok) {
    std::string got;
    for (int64_t d : original.dims) absl::StrAppend(&got, got.empty() ? "" : ",", d);
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": dims [", got, "] do not match the quantized matrix [",
        want[0], ",", want[1], "]", transposed ? " (transposed)" : "",
        scheme.bits <= 4 || grouped ? " (group-wise layouts need rank 2)" : ""));
  }
  if (absl::Status s = ValidateScheme(scheme, cols); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", s.message()));
  }
  const int64_t ng = NumGroups(scheme, cols);
  const bool sym = scheme.symmetric;
  const ir::DType dtype = int8 ? (sym ? ir::DType::kI8 : ir::DType::kU8)
                               : (sym ? ir::DType::kI4 : ir::DType::kU4);
  const uint64_t n = static_cast<uint64_t>(rows * cols);
  const uint64_t ns = static_cast<uint64_t>(rows * ng);
  auto payload = [&](uint64_t count) { return int8 ? count : (count + 1) / 2; };

  PackedTensors out;
  ir::Tensor& w = out.weight;
  w = Companion(original, original.name);
  w.dtype = dtype;
  w.dims = original.dims;
  w.data = ir::TensorData::Deferred(payload(n));
  w.quant.algorithm = std::move(algorithm);
  w.quant.scale = original.name + ".scale";
  if (!sym) w.quant.zero_point = original.name + ".zero_point";

  // Scale / zero-point element order: [rows] per channel; [rows, ng] or,
  // with the input axis first when transposed, [ng, rows] group-wise.
  std::vector<int64_t> sdims;
  if (!grouped) {
    w.quant.kind = ir::QuantKind::kInt8PerChannel;
    w.quant.axis = transposed ? 1 : 0;
    sdims = {rows};
  } else {
    w.quant.kind = int8 ? ir::QuantKind::kInt8GroupWise : ir::QuantKind::kInt4GroupWise;
    w.quant.axis = transposed ? 0 : 1;
    w.quant.group_size = EffectiveGroupSize(scheme, cols);
    sdims = transposed ? std::vector<int64_t>{ng, rows} : std::vector<int64_t>{rows, ng};
  }
  const bool f16 = scheme.scale_dtype == ScaleDType::kF16;
  out.scale = Companion(original, w.quant.scale);
  out.scale.dtype = f16 ? ir::DType::kF16 : ir::DType::kF32;
  out.scale.dims = sdims;
  out.scale.data = ir::TensorData::Deferred(ns * (f16 ? 2 : 4));
  if (!sym) {
    ir::Tensor z = Companion(original, w.quant.zero_point);
    z.dtype = dtype;
    z.dims = sdims;
    z.data = ir::TensorData::Deferred(payload(ns));
    out.zero_point = std::move(z);
  }
  return out;
}

absl::StatusOr<PackedTensors> ToIrTensors(const QuantizedMatrix& m,
                                          const ir::Tensor& original,
                                          bool transposed,
                                          std::string algorithm) {
  ASSIGN_OR_RETURN(PackedTensors out, PackedShapes(m.scheme, m.rows, m.cols, original,
                                                   transposed, std::move(algorithm)));
  const int64_t ng = m.num_groups();
  const size_t n = static_cast<size_t>(m.rows * m.cols);
  const size_t ns = static_cast<size_t>(m.rows * ng);
  if (m.q.size() != n || m.scale.size() != ns ||
      m.zero.size() != (m.scheme.symmetric ? 0 : ns)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pack '", original.name, "': quantized matrix sizes q=", m.q.size(), " scale=",
        m.scale.size(), " zero=", m.zero.size(), " expected ", n, ", ", ns,
        ", ", m.scheme.symmetric ? 0 : ns));
  }
  const int bits = m.scheme.bits;
  const ir::DType dtype = out.weight.dtype;
  out.weight.data = ir::TensorData::Owned(
      Encode(transposed ? Transpose(m.q, m.rows, m.cols) : m.q, dtype, bits));
  const bool transpose_params =
      transposed && out.weight.quant.kind != ir::QuantKind::kInt8PerChannel;
  std::vector<float> transposed_scale;
  if (transpose_params) transposed_scale = Transpose(m.scale, m.rows, ng);
  const std::vector<float>& scale = transpose_params ? transposed_scale : m.scale;
  const bool f16 = out.scale.dtype == ir::DType::kF16;
  // Little-endian (the format's byte order; x86/arm hosts).
  std::vector<uint8_t> sbytes(scale.size() * (f16 ? 2 : 4));
  if (f16) {
    // An f16 scale is exact: the quantizer chose it on the f16 grid
    // (MakeGrid). Converted as arrays (F16C where the CPU has it: one at a
    // time they were 2 % of an int4 conversion), then checked back.
    const auto* from = reinterpret_cast<const uint8_t*>(scale.data());
    RETURN_IF_ERROR(ir::ConvertFloats(ir::DType::kF32, from, ir::DType::kF16, sbytes.data(),
                                      scale.size()));
    std::vector<float> back(scale.size());
    RETURN_IF_ERROR(ir::ConvertFloats(ir::DType::kF16, sbytes.data(), ir::DType::kF32,
                                      reinterpret_cast<uint8_t*>(back.data()), scale.size()));
    for (size_t i = 0; i < scale.size(); ++i) {
      if (back[i] != scale[i]) {
        return absl::InternalError(absl::StrCat(
            "pack '", original.name, "': scale ", i, " = ", scale[i],
            " is not on the f16 grid its scheme stores (quantized with another scale dtype?)"));
      }
    }
  } else if (!scale.empty()) {
    std::memcpy(sbytes.data(), scale.data(), sbytes.size());
  }
  out.scale.data = ir::TensorData::Owned(std::move(sbytes));
  if (out.zero_point) {
    out.zero_point->data = ir::TensorData::Owned(
        Encode(transpose_params ? Transpose(m.zero, m.rows, ng) : m.zero, dtype, bits));
  }
  return out;
}

}  // namespace slimpack::quant
