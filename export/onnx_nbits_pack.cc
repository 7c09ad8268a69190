#include "export/onnx_nbits_pack.h"

#include "ir/quant.h"

namespace slimpack::onnx_export {
namespace {

int32_t CodeAt(ir::DType dtype, const uint8_t* p, uint64_t i) {
  switch (dtype) {
    case ir::DType::kI4: return ir::IntAt<ir::DType::kI4>(p, i);
    case ir::DType::kU4: return ir::IntAt<ir::DType::kU4>(p, i);
    case ir::DType::kI8: return ir::IntAt<ir::DType::kI8>(p, i);
    default: return ir::IntAt<ir::DType::kU8>(p, i);
  }
}

// The offset that makes a signed code the unsigned value the operators
// store (their zero point defaults to 2^(bits-1)).
int32_t UnsignedOffset(const ir::Tensor& t) {
  const bool is_signed = t.dtype == ir::DType::kI4 || t.dtype == ir::DType::kI8;
  return is_signed ? 1 << (NBitsOf(t) - 1) : 0;
}

// Stores unsigned value u of element `i` of a blob starting at `base`.
void PutCode(std::vector<uint8_t>& b, size_t base, int64_t i, uint32_t u, int bits) {
  if (bits == 8) {
    b[base + static_cast<size_t>(i)] = static_cast<uint8_t>(u);
  } else {
    b[base + static_cast<size_t>(i / 2)] |= static_cast<uint8_t>((u & 0x0F) << (4 * (i % 2)));
  }
}

}  // namespace

int NBitsOf(const ir::Tensor& t) { return t.quant.kind == ir::QuantKind::kInt8GroupWise ? 8 : 4; }

std::vector<uint8_t> PackNBitsCodes(const ir::Tensor& t, int64_t k, int64_t n,
                                    const std::vector<int64_t>& perm) {
  const int64_t block = t.quant.group_size;
  const int64_t kb = (k + block - 1) / block;
  const int bits = NBitsOf(t);
  const int64_t blob = block * bits / 8;
  const bool k_inner = t.quant.axis == 1;  // W [N, K] (else [K, N])
  const int32_t off = UnsignedOffset(t);
  std::vector<uint8_t> b(static_cast<size_t>(n * kb * blob), 0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      const uint64_t src = static_cast<uint64_t>(k_inner ? r * k + c : c * n + r);
      const uint32_t u = static_cast<uint32_t>(CodeAt(t.dtype, t.data.data(), src) + off);
      const int64_t at = perm.empty() ? c : perm[static_cast<size_t>(c)];
      PutCode(b, static_cast<size_t>(r * kb * blob + (at / block) * blob), at % block, u, bits);
    }
  }
  return b;
}

std::vector<int32_t> NBitsGroupIndex(int64_t block, const std::vector<int64_t>& perm) {
  std::vector<int32_t> g_idx(perm.size());
  for (size_t j = 0; j < perm.size(); ++j) {
    g_idx[static_cast<size_t>(perm[j])] = static_cast<int32_t>(static_cast<int64_t>(j) / block);
  }
  return g_idx;
}

std::vector<float> GroupsByRow(const std::vector<float>& s, int64_t rows, int64_t kb, bool k_inner) {
  std::vector<float> out(static_cast<size_t>(rows * kb));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < kb; ++g) out[r * kb + g] = s[k_inner ? r * kb + g : g * rows + r];
  }
  return out;
}

std::vector<int32_t> UnsignedZeroPoints(const ir::Tensor& t, const ir::Tensor* zp, int64_t rows,
                                        int64_t kb, bool k_inner) {
  const int32_t off = UnsignedOffset(t);
  std::vector<int32_t> zps(static_cast<size_t>(rows * kb), off);
  if (zp == nullptr) return zps;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < kb; ++g) {
      const uint64_t src = static_cast<uint64_t>(k_inner ? r * kb + g : g * rows + r);
      zps[r * kb + g] = CodeAt(zp->dtype, zp->data.data(), src) + off;
    }
  }
  return zps;
}

std::vector<uint8_t> PackZeroPoints(const std::vector<int32_t>& zps, int64_t rows, int64_t kb,
                                    int bits) {
  const int64_t row = bits == 8 ? kb : (kb + 1) / 2;
  std::vector<uint8_t> packed(static_cast<size_t>(rows * row), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < kb; ++g) {
      PutCode(packed, static_cast<size_t>(r * row), g, static_cast<uint32_t>(zps[r * kb + g]), bits);
    }
  }
  return packed;
}

std::vector<uint8_t> PackGatherCodes(const ir::Tensor& t) {
  const int bits = NBitsOf(t);
  const int64_t v = t.dims[0], h = t.dims[1];
  const int32_t off = UnsignedOffset(t);
  std::vector<uint8_t> b(static_cast<size_t>(v * (h * bits / 8)), 0);
  for (int64_t i = 0; i < v * h; ++i) {
    PutCode(b, 0, i, static_cast<uint32_t>(CodeAt(t.dtype, t.data.data(), i) + off), bits);
  }
  return b;
}

}  // namespace slimpack::onnx_export
