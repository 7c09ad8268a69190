// Helpers for ONNX importer/writer tests: scratch directories, ModelProto
// building from ONNX text syntax, raw/external tensor construction.
#ifndef SLIMPACK_TESTS_ONNX_ONNX_TEST_UTIL_H_
#define SLIMPACK_TESTS_ONNX_ONNX_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format::testing {

// A fresh directory under the gtest temp dir, removed (recursively) on
// destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Parses ONNX text syntax (onnx/defs/parser.h); records a test failure if
// the text does not parse.
onnx::ModelProto ParseModel(const std::string& text);
void WriteModel(const onnx::ModelProto& model, const std::string& path);
void WriteFile(const std::string& path, const std::string& bytes);
std::string ReadFile(const std::string& path);
// File names in `dir` (not recursive), sorted.
std::vector<std::string> ListDir(const std::string& dir);

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> ValuesOf(const ir::TensorData& data) {
  std::vector<T> out(data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), data.data(), out.size() * sizeof(T));
  return out;
}

onnx::TensorProto RawTensor(const std::string& name, int32_t onnx_type,
                            const std::vector<int64_t>& dims,
                            const std::string& bytes);
onnx::TensorProto FloatTensor(const std::string& name,
                              const std::vector<int64_t>& dims,
                              const std::vector<float>& values);
// Turns `t` into an external tensor with the given external_data entries
// (in order) and no embedded data.
void MakeExternal(onnx::TensorProto* t,
                  const std::vector<std::pair<std::string, std::string>>& kv);

// "x[N,4] -> Add(x, w) -> y" at opset 17, with no initializer: callers add
// `w` (f32[4] or whatever they need).
onnx::ModelProto AddModel();

}  // namespace slimpack::onnx_format::testing

#endif  // SLIMPACK_TESTS_ONNX_ONNX_TEST_UTIL_H_
