#include "runtime/rt_tensor.h"

#include <cstdlib>
#include <new>

#include "ir/float_convert.h"
#include "support/checked_math.h"

namespace slimpack::runtime {

constexpr uint64_t kAlignment = 64;

std::shared_ptr<Buffer> Buffer::Create(uint64_t bytes) {
  auto rounded = CheckedAlignUp(bytes == 0 ? kAlignment : bytes, kAlignment);
  if (!rounded) return nullptr;
  void* p = std::aligned_alloc(kAlignment, *rounded);
  if (p == nullptr) return nullptr;
  return std::shared_ptr<Buffer>(new (std::nothrow)
                                     Buffer(static_cast<uint8_t*>(p), *rounded));
}

Buffer::~Buffer() { std::free(data_); }

int64_t NumElementsOf(const std::vector<int64_t>& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    auto m = CheckedMul(n, static_cast<uint64_t>(d));
    if (!m || *m > static_cast<uint64_t>(INT64_MAX)) return -1;
    n = *m;
  }
  return static_cast<int64_t>(n);
}

std::string DimsToString(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

uint64_t RtTensor::byte_size() const {
  auto b = ir::DTypeByteSize(dtype_, static_cast<uint64_t>(num_elements_));
  return b ? *b : 0;
}

absl::StatusOr<RtTensor> RtTensor::Allocate(ir::DType dtype,
                                            std::vector<int64_t> dims) {
  int64_t n = NumElementsOf(dims);
  if (n < 0) {
    return absl::InvalidArgumentError("invalid tensor dims " +
                                      DimsToString(dims));
  }
  auto bytes = ir::DTypeByteSize(dtype, static_cast<uint64_t>(n));
  if (!bytes) {
    return absl::ResourceExhaustedError(
        "tensor " + DimsToString(dims) + " of " +
        std::string(ir::DTypeName(dtype)) + " has no representable byte size");
  }
  auto buffer = Buffer::Create(*bytes);
  if (buffer == nullptr) {
    return absl::ResourceExhaustedError("cannot allocate " +
                                        std::to_string(*bytes) +
                                        " bytes for tensor " +
                                        DimsToString(dims));
  }
  std::memset(buffer->data(), 0, *bytes);
  return WithBuffer(dtype, std::move(dims), std::move(buffer));
}

RtTensor RtTensor::WithBuffer(ir::DType dtype, std::vector<int64_t> dims,
                              std::shared_ptr<Buffer> buffer) {
  RtTensor t;
  t.dtype_ = dtype;
  t.num_elements_ = NumElementsOf(dims);
  t.dims_ = std::move(dims);
  t.data_ = buffer->data();
  t.buffer_ = std::move(buffer);
  return t;
}

RtTensor RtTensor::Borrow(ir::DType dtype, std::vector<int64_t> dims,
                          std::shared_ptr<const void> owner,
                          const uint8_t* data) {
  RtTensor t;
  t.dtype_ = dtype;
  t.num_elements_ = NumElementsOf(dims);
  t.dims_ = std::move(dims);
  t.owner_ = std::move(owner);
  t.data_ = data;
  return t;
}

absl::StatusOr<RtTensor> RtTensor::FromIr(const ir::Tensor& t) {
  return FromIrImpl(t, /*widen_half=*/true);
}

absl::StatusOr<RtTensor> RtTensor::FromIrKeepingDType(const ir::Tensor& t) {
  return FromIrImpl(t, /*widen_half=*/false);
}

absl::StatusOr<RtTensor> RtTensor::FromIrImpl(const ir::Tensor& t, bool widen_half) {
  auto expected = t.ExpectedBytes();
  if (!expected.ok()) {
    return absl::InvalidArgumentError("tensor '" + t.name +
                                      "': " + std::string(expected.status().message()));
  }
  if (*expected != t.data.size()) {
    return absl::InvalidArgumentError(
        "tensor '" + t.name + "' " + std::string(ir::DTypeName(t.dtype)) +
        DimsToString(t.dims) + " needs " + std::to_string(*expected) +
        " bytes, found " + std::to_string(t.data.size()));
  }
  if (t.dtype == ir::DType::kUndefined) {
    return absl::InvalidArgumentError("tensor '" + t.name +
                                      "' has no element type");
  }
  if (widen_half && (t.dtype == ir::DType::kF16 || t.dtype == ir::DType::kBF16)) {
    auto out = Allocate(ir::DType::kF32, t.dims);
    if (!out.ok()) return out.status();
    float* dst = out->mutable_data<float>();
    const uint8_t* src = t.data.data();
    for (int64_t i = 0; i < out->num_elements(); ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = t.dtype == ir::DType::kF16 ? ir::F16ToF32(h) : ir::Bf16ToF32(h);
    }
    return out;
  }
  int bits = ir::DTypeBits(t.dtype);
  uint64_t align = bits >= 8 ? static_cast<uint64_t>(bits / 8) : 1;
  const uint8_t* p = t.data.data();
  if (reinterpret_cast<uintptr_t>(p) % align == 0 || t.data.empty()) {
    // The TensorData copy shares the initializer's owner: no byte copy.
    auto keep = std::make_shared<ir::TensorData>(t.data);
    return Borrow(t.dtype, t.dims, keep, keep->data());
  }
  // Views into a file or proto may be unaligned; copy those.
  auto out = Allocate(t.dtype, t.dims);
  if (!out.ok()) return out.status();
  std::memcpy(out->mutable_raw(), p, t.data.size());
  return out;
}

RtTensor RtTensor::Reshaped(std::vector<int64_t> dims) const {
  RtTensor t = *this;
  t.num_elements_ = NumElementsOf(dims);
  t.dims_ = std::move(dims);
  return t;
}

std::string RtTensor::DebugString() const {
  return std::string(ir::DTypeName(dtype_)) + DimsToString(dims_);
}

}  // namespace slimpack::runtime
