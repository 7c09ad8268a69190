// Pass test helpers (see pass_test_util.h).
#include "tests/passes/pass_test_util.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "runtime/interpreter.h"
#include "ir/printer.h"
#include "formats/onnx/onnx_importer.h"
#include "gtest/gtest.h"
#include "runtime/kernels/fused_kernels.h"
#include "tests/onnx/onnx_test_util.h"

namespace slimpack::passes::testing {

ir::Model ImportText(const std::string& onnx_text) {
  onnx::ModelProto proto = onnx_format::testing::ParseModel(onnx_text);
  for (onnx::NodeProto& node : *proto.mutable_graph()->mutable_node()) {
    if (node.name().empty() && node.output_size() > 0) node.set_name(node.output(0));
  }
  onnx_format::testing::ScratchDir dir;
  std::string path = dir.File("model.onnx");
  onnx_format::testing::WriteModel(proto, path);
  return ImportFile(path);
}

ir::Model ImportFile(const std::string& path) {
  absl::StatusOr<ir::Model> model = onnx_format::ImportOnnx(path);
  if (!model.ok()) {
    ADD_FAILURE() << "import of " << path << " failed: " << model.status();
    return ir::Model();
  }
  return *std::move(model);
}

void NameNode(ir::Graph& graph, const std::string& output, const std::string& name) {
  for (ir::Node& node : graph.nodes) {
    if (!node.outputs.empty() && node.outputs[0] == output) {
      node.name = name;
      return;
    }
  }
  ADD_FAILURE() << "no node produces '" << output << "'";
}

PassRun RunPass(const Pass& pass, ir::Graph& graph, int64_t opset) {
  PassRun run{absl::OkStatus(), PassContext(opset)};
  run.status = pass.Run(graph, run.context);
  return run;
}

std::vector<float> RandomFloats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::map<std::string, runtime::RtTensor> RandomInputs(
    const ir::Graph& graph, uint32_t seed, int64_t symbolic_dim) {
  std::map<std::string, runtime::RtTensor> inputs;
  uint32_t k = 0;
  for (const ir::ValueInfo& in : graph.inputs) {
    if (graph.FindInitializer(in.name) != nullptr) continue;
    std::vector<int64_t> dims;
    for (const ir::Dim& d : in.shape.dims()) {
      dims.push_back(d.is_static() ? d.value : symbolic_dim);
    }
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    inputs[in.name] = runtime::RtTensor::FromVector<float>(
        dims, RandomFloats(static_cast<size_t>(n), seed + 7919 * k++, -2.0f, 2.0f));
  }
  return inputs;
}

std::string FloatList(const std::vector<float>& values) {
  std::string out;
  char buf[32];
  for (size_t i = 0; i < values.size(); ++i) {
    std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(values[i]));
    out += (i ? ", " : "") + std::string(buf);
  }
  return out;
}

std::vector<std::vector<float>> Evaluate(
    const ir::Graph& graph,
    const std::map<std::string, runtime::RtTensor>& inputs, int64_t opset) {
  runtime::InterpreterOptions options;
  options.opset_version = opset;
  auto interpreter = runtime::Interpreter::Create(graph, options);
  if (!interpreter.ok()) {
    ADD_FAILURE() << "interpreter: " << interpreter.status();
    return {};
  }
  auto outputs = interpreter->Run(inputs);
  if (!outputs.ok()) {
    ADD_FAILURE() << "run: " << outputs.status();
    return {};
  }
  std::vector<std::vector<float>> result;
  for (const runtime::RtTensor& t : *outputs) result.push_back(t.ToVector<float>());
  return result;
}

double MaxAbsDiff(const std::vector<std::vector<float>>& a,
                  const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < a[i].size(); ++j) {
      double d = std::fabs(static_cast<double>(a[i][j]) - b[i][j]);
      if (!(d <= worst)) worst = d;  // NaN propagates as a failure
    }
  }
  return worst;
}

std::string PrintMasked(const ir::Graph& graph,
                        const std::vector<std::string>& masked_initializers) {
  std::string text = ir::PrintGraph(graph);
  for (const std::string& name : masked_initializers) {
    std::string key = "init %" + name + ": ";
    size_t pos = text.find(key);
    if (pos == std::string::npos) continue;
    size_t hash = text.find('#', pos);
    size_t eol = text.find('\n', pos);
    if (hash != std::string::npos && hash < eol) text.replace(hash, eol - hash, "#masked");
  }
  return text;
}

std::vector<float> FloatsOf(const ir::Tensor& t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));
  return v;
}

int CountOps(const ir::Graph& graph, const std::string& op_type) {
  int n = 0;
  for (const ir::Node& node : graph.nodes) n += node.op_type == op_type ? 1 : 0;
  return n;
}

}  // namespace slimpack::passes::testing
