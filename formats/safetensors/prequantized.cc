// Unpacking GPTQ / AWQ packed linears into slimpack quantized weights with
// the checkpoint's codes (prequantized.h; the packings are written out in
// scripts/fixtures/make_prequantized_checkpoints.py).
#include "formats/safetensors/prequantized.h"
#include "formats/safetensors/prequantized_grid.h"

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

using prequant_internal::Grid;
using prequant_internal::Where;

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
    ASSIGN_OR_RETURN(g, prequant_internal::ReadGptq(c, p));
  } else if (c.method == PrequantMethod::kAwq) {
    ASSIGN_OR_RETURN(g, prequant_internal::ReadAwq(c, p));
  } else {
    ASSIGN_OR_RETURN(g, prequant_internal::ReadCompressed(c, p));
  }
  const bool int8 = g.bits == 8;
  // 8 bits with one group per output row is int8_per_channel; shorter
  // groups are int8_groupwise.
  const bool per_channel = int8 && g.groups == 1;
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
      per_channel ? std::vector<int64_t>{g.out} : std::vector<int64_t>{g.out, g.groups};
  std::vector<ir::Tensor> out;
  ir::Tensor w = Companion(*p.qweight, w_name, dtype, {g.out, g.in},
                           int8 ? std::move(codes) : Nibbles(codes));
  w.quant.kind = per_channel ? ir::QuantKind::kInt8PerChannel
                 : int8      ? ir::QuantKind::kInt8GroupWise
                             : ir::QuantKind::kInt4GroupWise;
  w.quant.axis = per_channel ? 0 : 1;
  w.quant.group_size = per_channel ? 0 : g.group;
  w.quant.scale = w_name + ".scale";
  if (!g.signed_codes) w.quant.zero_point = w_name + ".zero_point";
  w.quant.algorithm = c.method == PrequantMethod::kGptq  ? "gptq-checkpoint"
                      : c.method == PrequantMethod::kAwq ? "awq-checkpoint"
                                                         : "compressed-tensors-checkpoint";
  // f16 scales stay f16 (the checkpoint's bits); others are stored f32.
  const bool f16 = p.scales->dtype == ir::DType::kF16;
  std::vector<uint8_t> scale_bytes(scale.size() * (f16 ? 2 : 4));
  for (size_t i = 0; i < scale.size(); ++i) {
    if (f16) {
      const uint16_t h = ir::F32ToF16(scale[i]);  // exact: widened from f16
      std::memcpy(scale_bytes.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(scale_bytes.data() + 4 * i, &scale[i], 4);
    }
  }
  out.push_back(Companion(*p.scales, w.quant.scale, f16 ? ir::DType::kF16 : ir::DType::kF32,
                          param_dims, std::move(scale_bytes)));
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
  if (c.method == PrequantMethod::kFp8) return ImportFp8(c, tensors);
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
