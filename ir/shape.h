// Tensor shapes with symbolic dimensions. Axis convention for the whole
// project: C order (row-major), dimension 0 is the outermost (slowest).
#ifndef SLIMPACK_IR_SHAPE_H_
#define SLIMPACK_IR_SHAPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slimpack::ir {

// One dimension: a known size (value >= 0), a named symbol ("batch"), or
// unknown (value < 0 and empty symbol).
struct Dim {
  int64_t value = -1;
  std::string symbol;

  static Dim Static(int64_t v) { return Dim{v, {}}; }
  static Dim Symbolic(std::string s) { return Dim{-1, std::move(s)}; }
  bool is_static() const { return value >= 0; }
  bool operator==(const Dim& o) const {
    return value == o.value && symbol == o.symbol;
  }
};

class Shape {
 public:
  Shape() = default;  // unknown rank
  explicit Shape(std::vector<Dim> dims) : rank_known_(true), dims_(std::move(dims)) {}
  static Shape FromDims(const std::vector<int64_t>& dims);

  bool rank_known() const { return rank_known_; }
  size_t rank() const { return dims_.size(); }
  const std::vector<Dim>& dims() const { return dims_; }
  const Dim& dim(size_t i) const { return dims_[i]; }
  bool is_static() const;
  // Static dims as integers; nullopt if any dim is not static.
  std::optional<std::vector<int64_t>> StaticDims() const;
  // Product of static dims; nullopt if not static or on overflow.
  std::optional<uint64_t> NumElements() const;
  // "[1,3,224,224]", "[batch,128]", "[?]" or "<unknown rank>".
  std::string ToString() const;

  bool operator==(const Shape& o) const {
    return rank_known_ == o.rank_known_ && dims_ == o.dims_;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  bool rank_known_ = false;
  std::vector<Dim> dims_;
};

// Checked product of dims (each must be >= 0); nullopt on negative or
// overflow.
std::optional<uint64_t> CheckedNumElements(const std::vector<int64_t>& dims);

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_SHAPE_H_
