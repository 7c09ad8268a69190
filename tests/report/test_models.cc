#include "tests/report/test_models.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace slimpack::report::testing {

ir::Model RoundWeights(const ir::Model& reference, int default_bits,
                       const std::map<std::string, int>& bits) {
  ir::Model m = reference;
  std::vector<std::string> names;
  for (const ir::Tensor& t : m.graph.initializers()) names.push_back(t.name);
  for (const std::string& name : names) {
    ir::Tensor* t = m.graph.FindMutableInitializer(name);
    auto it = bits.find(name);
    const int b = it == bits.end() ? default_bits : it->second;
    if (b <= 0 || t->dtype != ir::DType::kF32 || t->data.size() < 8) continue;
    const size_t n = t->data.size() / 4;
    std::vector<float> v(n);
    std::memcpy(v.data(), t->data.data(), n * 4);
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double a = *lo, step = (static_cast<double>(*hi) - a) / ((1 << b) - 1);
    if (step <= 0) continue;
    for (float& x : v) x = static_cast<float>(a + std::round((x - a) / step) * step);
    std::vector<uint8_t> bytes(n * 4);
    std::memcpy(bytes.data(), v.data(), n * 4);
    t->data = ir::TensorData::Owned(std::move(bytes));
  }
  return m;
}

ir::Model QuantizeInt8PerChannel(const ir::Model& reference, const std::string& name) {
  ir::Model m = reference;
  ir::Tensor* t = m.graph.FindMutableInitializer(name);
  const int64_t rows = t->dims[0];
  const size_t n = t->data.size() / 4, per_row = n / rows;
  const float* w = reinterpret_cast<const float*>(t->data.data());
  std::vector<float> scale(rows);
  std::vector<uint8_t> q(n);
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0;
    for (size_t i = 0; i < per_row; ++i) amax = std::max(amax, std::fabs(w[r * per_row + i]));
    scale[r] = amax > 0 ? amax / 127 : 1;
    for (size_t i = 0; i < per_row; ++i) {
      const float v = std::round(w[r * per_row + i] / scale[r]);
      q[r * per_row + i] =
          static_cast<uint8_t>(static_cast<int8_t>(std::max(-127.f, std::min(127.f, v))));
    }
  }
  ir::Tensor s;
  s.name = name + ".scale";
  s.dtype = ir::DType::kF32;
  s.dims = {rows};
  std::vector<uint8_t> sb(rows * 4);
  std::memcpy(sb.data(), scale.data(), sb.size());
  s.data = ir::TensorData::Owned(std::move(sb));
  s.layer = t->layer;
  t->dtype = ir::DType::kI8;
  t->data = ir::TensorData::Owned(std::move(q));
  t->quant.kind = ir::QuantKind::kInt8PerChannel;
  t->quant.axis = 0;
  t->quant.scale = s.name;
  t->quant.algorithm = "rtn";
  static_cast<void>(m.graph.AddInitializer(std::move(s)));
  return m;
}

}  // namespace slimpack::report::testing
