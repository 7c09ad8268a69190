// Test helper implementations.
#include "tests/onnx/onnx_test_util.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "onnx/defs/parser.h"

namespace slimpack::onnx_format::testing {

ScratchDir::ScratchDir() {
  std::string tmpl = ::testing::TempDir() + "slimpack_onnx_XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed for " << tmpl;
  }
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

onnx::ModelProto ParseModel(const std::string& text) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  if (!status.IsOK()) {
    ADD_FAILURE() << "ONNX text does not parse: " << status.ErrorMessage()
                  << "\n" << text;
  }
  return model;
}

void WriteModel(const onnx::ModelProto& model, const std::string& path) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    ADD_FAILURE() << "cannot serialize model for " << path;
  }
  WriteFile(path, bytes);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) ADD_FAILURE() << "cannot write " << path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

onnx::TensorProto RawTensor(const std::string& name, int32_t onnx_type,
                            const std::vector<int64_t>& dims,
                            const std::string& bytes) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx_type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(bytes);
  return t;
}

onnx::TensorProto FloatTensor(const std::string& name,
                              const std::vector<int64_t>& dims,
                              const std::vector<float>& values) {
  return RawTensor(name, onnx::TensorProto::FLOAT, dims, Bytes(values));
}

void MakeExternal(onnx::TensorProto* t,
                  const std::vector<std::pair<std::string, std::string>>& kv) {
  t->clear_raw_data();
  t->clear_float_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : kv) {
    auto* entry = t->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
}

onnx::ModelProto AddModel() {
  return ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17], producer_name: "slimpack-test">
add_graph (float[N, 4] x) => (float[N, 4] y) {
  y = Add(x, w)
}
)ONNX");
}

}  // namespace slimpack::onnx_format::testing
