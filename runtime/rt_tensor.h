// The interpreter's runtime tensor: a dtype, static dims and storage that is
// either owned (a 64-byte aligned buffer) or borrowed (a view kept alive by a
// shared owner, e.g. an initializer's bytes). Storage is shared on copy, so
// Reshape/Identity/Squeeze produce new tensors without copying.
#ifndef SLIMPACK_RUNTIME_RT_TENSOR_H_
#define SLIMPACK_RUNTIME_RT_TENSOR_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/dtype.h"
#include "ir/tensor.h"

namespace slimpack::runtime {

// A heap block aligned for SIMD loads. Recycled by the interpreter's pool.
class Buffer {
 public:
  // nullptr when the allocation fails (callers turn that into a Status).
  static std::shared_ptr<Buffer> Create(uint64_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() const { return data_; }
  uint64_t capacity() const { return capacity_; }

 private:
  Buffer(uint8_t* data, uint64_t capacity) : data_(data), capacity_(capacity) {}
  uint8_t* data_;
  uint64_t capacity_;
};

class RtTensor {
 public:
  RtTensor() = default;

  // Fresh zero-filled storage. ResourceExhausted if the size overflows or
  // the allocation fails.
  static absl::StatusOr<RtTensor> Allocate(ir::DType dtype,
                                           std::vector<int64_t> dims);
  // Uses `buffer` (capacity >= the byte size, checked by the caller) without
  // clearing it.
  static RtTensor WithBuffer(ir::DType dtype, std::vector<int64_t> dims,
                             std::shared_ptr<Buffer> buffer);
  // A read-only view of `data`, valid while `owner` lives.
  static RtTensor Borrow(ir::DType dtype, std::vector<int64_t> dims,
                         std::shared_ptr<const void> owner,
                         const uint8_t* data);
  // Copies `values` into owned storage. For tests and small constants;
  // `dims` must match values.size() (our invariant, CHECKed).
  template <typename T>
  static RtTensor FromVector(std::vector<int64_t> dims,
                             const std::vector<T>& values);
  // Converts an IR tensor (initializer or attribute): f16/bf16 become f32,
  // other dtypes are borrowed without a copy when suitably aligned.
  // InvalidArgument naming the tensor if its byte count does not match its
  // dtype and dims.
  static absl::StatusOr<RtTensor> FromIr(const ir::Tensor& t);
  // As FromIr, but f16/bf16 keep their dtype: a graph input's value as the
  // user gave it (an f16 input is declared f16; the interpreter widens it).
  static absl::StatusOr<RtTensor> FromIrKeepingDType(const ir::Tensor& t);

  bool defined() const { return dtype_ != ir::DType::kUndefined; }
  ir::DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t dim(size_t i) const { return dims_[i]; }
  int64_t num_elements() const { return num_elements_; }
  uint64_t byte_size() const;
  // True when this tensor owns its storage (kernels may write into it).
  bool is_owned() const { return buffer_ != nullptr; }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  const uint8_t* raw() const { return data_; }
  uint8_t* mutable_raw() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_);
  }
  // Only for owned tensors (our invariant, CHECKed in debug use).
  template <typename T>
  T* mutable_data() const {
    return reinterpret_cast<T*>(mutable_raw());
  }

  // Same storage, new dims (same element count: the caller's invariant).
  RtTensor Reshaped(std::vector<int64_t> dims) const;
  template <typename T>
  std::vector<T> ToVector() const {
    std::vector<T> out(num_elements_);
    if constexpr (std::is_same_v<T, bool>) {
      for (int64_t i = 0; i < num_elements_; ++i) out[i] = data_[i] != 0;
    } else if (num_elements_ > 0) {
      std::memcpy(out.data(), data_, out.size() * sizeof(T));
    }
    return out;
  }
  // "f32[1,3,8,8]".
  std::string DebugString() const;

 private:
  static absl::StatusOr<RtTensor> FromIrImpl(const ir::Tensor& t, bool widen_half);

  ir::DType dtype_ = ir::DType::kUndefined;
  std::vector<int64_t> dims_;
  int64_t num_elements_ = 0;
  std::shared_ptr<Buffer> buffer_;       // set when owned
  std::shared_ptr<const void> owner_;    // set when borrowed
  const uint8_t* data_ = nullptr;
};

// C++ element type of each dtype the kernels compute on.
template <typename T>
constexpr ir::DType DTypeOf();
template <> constexpr ir::DType DTypeOf<float>() { return ir::DType::kF32; }
template <> constexpr ir::DType DTypeOf<double>() { return ir::DType::kF64; }
template <> constexpr ir::DType DTypeOf<int64_t>() { return ir::DType::kI64; }
template <> constexpr ir::DType DTypeOf<int32_t>() { return ir::DType::kI32; }
template <> constexpr ir::DType DTypeOf<int16_t>() { return ir::DType::kI16; }
template <> constexpr ir::DType DTypeOf<int8_t>() { return ir::DType::kI8; }
template <> constexpr ir::DType DTypeOf<uint8_t>() { return ir::DType::kU8; }
template <> constexpr ir::DType DTypeOf<uint16_t>() { return ir::DType::kU16; }
template <> constexpr ir::DType DTypeOf<uint32_t>() { return ir::DType::kU32; }
template <> constexpr ir::DType DTypeOf<uint64_t>() { return ir::DType::kU64; }
template <> constexpr ir::DType DTypeOf<bool>() { return ir::DType::kBool; }

// Element count of `dims`, or -1 on a negative dim or overflow.
int64_t NumElementsOf(const std::vector<int64_t>& dims);
// "[1,3,8,8]".
std::string DimsToString(const std::vector<int64_t>& dims);

template <typename T>
RtTensor RtTensor::FromVector(std::vector<int64_t> dims,
                              const std::vector<T>& values) {
  auto t = Allocate(DTypeOf<T>(), std::move(dims));
  if (!t.ok() || t->num_elements() != static_cast<int64_t>(values.size())) {
    std::abort();  // test/programming error, not user input
  }
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < values.size(); ++i) {
      t->template mutable_data<uint8_t>()[i] = values[i] ? 1 : 0;
    }
  } else if (!values.empty()) {
    std::memcpy(t->mutable_raw(), values.data(), values.size() * sizeof(T));
  }
  return *std::move(t);
}

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_RT_TENSOR_H_
