// A one-node model, y = x · wᵀ (Gemm transB), around a weight in any
// layout: the artifact tests write it, read it back and run both through
// the interpreter, which must give the same floats as the weight decoded
// to f32.
#ifndef SLIMPACK_TESTS_SHARD_READER_GEMM_FIXTURE_H_
#define SLIMPACK_TESTS_SHARD_READER_GEMM_FIXTURE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "runtime/interpreter.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::shard_reader::testing {

// A tensor holding `bytes` as they are.
inline ir::Tensor RawTensor(std::string name, ir::DType dt, std::vector<int64_t> dims,
                            std::vector<uint8_t> bytes) {
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = dt;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

inline ir::Tensor F32Tensor(std::string name, std::vector<int64_t> dims,
                            const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return RawTensor(std::move(name), ir::DType::kF32, std::move(dims), std::move(b));
}

// An empty model as the ONNX importer would describe one read from
// DIR/model.onnx (IR 8, opset 17).
inline ir::Model OnnxOriginModel(const std::string& dir) {
  ir::Model m;
  m.source_format = ir::SourceFormat::kOnnx;
  m.source_path = dir + "/model.onnx";
  m.ir_version = 8;
  m.opset_imports[""] = 17;
  return m;
}

// Input "x" [batch, cols], initializers `weights` (the first is "w"
// [rows, cols]; a quantized one brings its scale), output "y" [batch, rows].
inline ir::Model GemmModel(const std::string& dir, int64_t batch, int64_t rows, int64_t cols,
                           const std::vector<ir::Tensor>& weights) {
  ir::Model m = OnnxOriginModel(dir);
  ir::Graph& g = m.graph;
  g.name = "gemm";
  g.inputs.push_back({"x", ir::DType::kF32, ir::Shape::FromDims({batch, cols})});
  for (const ir::Tensor& t : weights) (void)g.AddInitializer(t);
  ir::Node n;
  n.name = "gemm";
  n.op_type = "Gemm";
  n.inputs = {"x", "w"};
  n.outputs = {"y"};
  n.attributes["transB"] = ir::Attribute::Int(1);
  g.nodes.push_back(n);
  g.outputs.push_back({"y", ir::DType::kF32, ir::Shape::FromDims({batch, rows})});
  return m;
}

// Runs GemmModel `m` on x [batch, cols]; empty (with a failed expectation)
// when the interpreter refuses it.
inline std::vector<float> RunGemm(const ir::Model& m, int64_t batch, int64_t cols,
                                  const std::vector<float>& x) {
  auto interp = runtime::Interpreter::Create(m, {});
  EXPECT_THAT(interp, ::slimpack::testing::IsOk());
  if (!interp.ok()) return {};
  auto out = interp->Run({{"x", runtime::RtTensor::FromVector<float>({batch, cols}, x)}});
  EXPECT_THAT(out, ::slimpack::testing::IsOk());
  return out.ok() ? (*out)[0].ToVector<float>() : std::vector<float>{};
}

}  // namespace slimpack::shard_reader::testing

#endif  // SLIMPACK_TESTS_SHARD_READER_GEMM_FIXTURE_H_
