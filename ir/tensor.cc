#include "ir/tensor.h"

#include <cstring>

#include <algorithm>

#include "absl/status/status.h"
#include "ir/shape.h"
#include "support/checked_math.h"
#include "support/large_array.h"

namespace slimpack::ir {

Provenance Provenance::FromNode(std::string node_name) {
  Provenance p;
  p.source_nodes.push_back(std::move(node_name));
  return p;
}

Provenance Provenance::FromFile(std::string file, int64_t offset) {
  Provenance p;
  p.file = std::move(file);
  p.offset = offset;
  return p;
}

Provenance Provenance::Merge(const Provenance& a, const Provenance& b) {
  Provenance p = a;
  for (const auto& n : b.source_nodes) {
    if (std::find(p.source_nodes.begin(), p.source_nodes.end(), n) ==
        p.source_nodes.end()) {
      p.source_nodes.push_back(n);
    }
  }
  if (p.file.empty()) {
    p.file = b.file;
    p.offset = b.offset;
  }
  return p;
}

std::string Provenance::ToString() const {
  std::string s;
  if (source_nodes.size() == 1) {
    s = source_nodes[0];
  } else if (source_nodes.size() > 1) {
    s = "fused[";
    for (size_t i = 0; i < source_nodes.size(); ++i) {
      if (i) s += ",";
      s += source_nodes[i];
    }
    s += "]";
  }
  if (!file.empty()) {
    if (!s.empty()) s += " ";
    s += file;
    if (offset >= 0) s += "@" + std::to_string(offset);
  }
  return s;
}

TensorData TensorData::Owned(std::vector<uint8_t> bytes) {
  auto owner = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  TensorData d;
  d.data_ = owner->data();
  d.size_ = owner->size();
  d.owner_ = std::move(owner);
  return d;
}

TensorData TensorData::OwnedUninitialized(uint64_t size, uint8_t** bytes) {
  // Large buffers in huge pages: a 32 MiB GGUF q/k matrix put back in
  // checkpoint row order spent 0.1 s faulting in 4 KiB pages on our VMs.
  const bool large = size >= support::kLargeArrayBytes;
  uint8_t* p = static_cast<uint8_t*>(large ? support::AllocateLarge(size) : ::operator new(size));
  TensorData d;
  d.data_ = p;
  d.size_ = size;
  *bytes = p;
  d.owner_ = std::shared_ptr<const void>(p, [large](const void* q) {
    void* v = const_cast<void*>(q);
    large ? support::FreeLarge(v) : ::operator delete(v);
  });
  return d;
}

TensorData TensorData::View(std::shared_ptr<const void> owner,
                            const uint8_t* data, uint64_t size) {
  TensorData d;
  d.owner_ = std::move(owner);
  d.data_ = data;
  d.size_ = size;
  d.is_view_ = true;
  return d;
}

TensorData TensorData::Deferred(uint64_t size) {
  TensorData d;
  d.size_ = size;
  return d;
}

std::string_view WeightRoleName(WeightRole r) {
  switch (r) {
    case WeightRole::kUnknown: return "unknown";
    case WeightRole::kEmbedding: return "embedding";
    case WeightRole::kQProj: return "q_proj";
    case WeightRole::kKProj: return "k_proj";
    case WeightRole::kVProj: return "v_proj";
    case WeightRole::kOProj: return "o_proj";
    case WeightRole::kGateProj: return "gate_proj";
    case WeightRole::kUpProj: return "up_proj";
    case WeightRole::kDownProj: return "down_proj";
    case WeightRole::kAttnNorm: return "attn_norm";
    case WeightRole::kMlpNorm: return "mlp_norm";
    case WeightRole::kFinalNorm: return "final_norm";
    case WeightRole::kLmHead: return "lm_head";
    case WeightRole::kBias: return "bias";
  }
  return "unknown";
}

absl::StatusOr<uint64_t> Tensor::NumElements() const {
  auto n = CheckedNumElements(dims);
  if (!n) {
    return absl::InvalidArgumentError("tensor '" + name + "' shape " +
                                      Shape::FromDims(dims).ToString() +
                                      " has a negative dim or overflows");
  }
  return *n;
}

absl::StatusOr<uint64_t> Tensor::ExpectedBytes() const {
  auto n = NumElements();
  if (!n.ok()) return n.status();
  if (quant.kind == QuantKind::kGgmlBlocks) {
    const uint64_t cols = dims.empty() ? 0 : static_cast<uint64_t>(dims.back());
    const std::optional<uint64_t> row = dims.empty() ? std::nullopt
                                                     : GgmlRowBytes(quant.block_type, cols);
    const std::optional<uint64_t> total =
        row ? CheckedMul(cols == 0 ? 0 : *n / cols, *row) : std::nullopt;
    if (!total) {
      return absl::InvalidArgumentError(
          "tensor '" + name + "': " + std::string(GgmlTypeName(quant.block_type)) +
          " blocks of shape " + Shape::FromDims(dims).ToString() +
          " are undefined (rank 0, a last dim that is not a whole number of blocks, or "
          "an overflow)");
    }
    return *total;
  }
  auto b = DTypeByteSize(dtype, *n);
  if (!b) {
    return absl::InvalidArgumentError(
        "tensor '" + name + "': byte size of " + std::to_string(*n) + " x " +
        std::string(DTypeName(dtype)) + " is undefined or overflows");
  }
  return *b;
}

int64_t IndexElementAt(const Tensor& t, uint64_t i) {
  if (t.dtype == DType::kI64) {
    int64_t v;
    std::memcpy(&v, t.data.data() + 8 * i, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, t.data.data() + 4 * i, 4);
  return v;
}

}  // namespace slimpack::ir
