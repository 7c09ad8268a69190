// Graph pieces the ir tests build by hand.
#ifndef SLIMPACK_TESTS_IR_IR_TEST_UTIL_H_
#define SLIMPACK_TESTS_IR_IR_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace slimpack::ir::testing {

inline Node MakeNode(std::string name, std::string op, std::vector<std::string> in,
                     std::vector<std::string> out) {
  Node n;
  n.name = std::move(name);
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// An f32 tensor holding `values`, or zeros when `values` is empty.
inline Tensor F32(std::string name, std::vector<int64_t> dims, std::vector<float> values = {}) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = DType::kF32;
  t.dims = std::move(dims);
  if (values.empty()) {
    int64_t numel = 1;
    for (int64_t d : t.dims) numel *= d;
    values.assign(static_cast<size_t>(numel), 0.f);
  }
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  t.data = TensorData::Owned(std::move(bytes));
  return t;
}

}  // namespace slimpack::ir::testing

#endif  // SLIMPACK_TESTS_IR_IR_TEST_UTIL_H_
