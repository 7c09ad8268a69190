#include "ir/shape.h"

#include "support/checked_math.h"

namespace slimpack::ir {

Shape Shape::FromDims(const std::vector<int64_t>& dims) {
  std::vector<Dim> d;
  d.reserve(dims.size());
  for (int64_t v : dims) d.push_back(Dim::Static(v));
  return Shape(std::move(d));
}

bool Shape::is_static() const {
  if (!rank_known_) return false;
  for (const auto& d : dims_) {
    if (!d.is_static()) return false;
  }
  return true;
}

std::optional<std::vector<int64_t>> Shape::StaticDims() const {
  if (!is_static()) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const auto& d : dims_) out.push_back(d.value);
  return out;
}

std::optional<uint64_t> Shape::NumElements() const {
  auto dims = StaticDims();
  if (!dims) return std::nullopt;
  return CheckedNumElements(*dims);
}

std::string Shape::ToString() const {
  if (!rank_known_) return "<unknown rank>";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    if (dims_[i].is_static()) {
      s += std::to_string(dims_[i].value);
    } else if (!dims_[i].symbol.empty()) {
      s += dims_[i].symbol;
    } else {
      s += "?";
    }
  }
  return s + "]";
}

std::optional<uint64_t> CheckedNumElements(const std::vector<int64_t>& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    auto m = CheckedMul(n, static_cast<uint64_t>(d));
    // Counts must fit int64 too: ONNX dims and most index math are signed.
    if (!m || *m > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    n = *m;
  }
  return n;
}

}  // namespace slimpack::ir
