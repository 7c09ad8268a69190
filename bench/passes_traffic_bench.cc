// passes_traffic_bench: for each model, the node count and the estimated
// bytes of intermediate activations read+written per inference, before
// and after the default pipeline. Usage:
//   passes_traffic_bench [--batch N] [-v] [model.onnx ...]
// -v also prints the pipeline's per-pass lines (as `slimpack convert -v`).
// Without models it reports the bundled digits CNN and the fixtures.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "formats/import.h"
#include "passes/pipeline.h"
#include "passes/traffic_estimate.h"

namespace {

int64_t Opset(const slimpack::ir::Model& model) {
  auto it = model.opset_imports.find("");
  return it == model.opset_imports.end() ? 17 : it->second;
}

int Report(const std::string& path, int64_t batch, bool verbose) {
  absl::StatusOr<slimpack::ir::Model> model = slimpack::formats::ImportModel(path);
  if (!model.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), model.status().ToString().c_str());
    return 1;
  }
  auto before = slimpack::passes::EstimateActivationTraffic(model->graph, Opset(*model), batch);
  slimpack::passes::PipelineRequest request;
  request.verify_each = true;
  auto run = slimpack::passes::RunPipeline(*model, request);
  if (!before.ok() || !run.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(),
                 (!before.ok() ? before.status() : run.status()).ToString().c_str());
    return 1;
  }
  if (verbose) {
    for (const std::string& line : run->verbose_lines) std::printf("  %s\n", line.c_str());
  }
  auto after = slimpack::passes::EstimateActivationTraffic(model->graph, Opset(*model), batch);
  if (!after.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), after.status().ToString().c_str());
    return 1;
  }
  double saved = before->total() > 0
                     ? 100.0 * (before->total() - after->total()) / before->total()
                     : 0.0;
  std::printf("%s: nodes %lld -> %lld; activation bytes read+written per inference "
              "(symbolic dims = %lld) %lld -> %lld (-%.1f%%)\n",
              path.c_str(), static_cast<long long>(run->nodes_before),
              static_cast<long long>(run->nodes_after), static_cast<long long>(batch),
              static_cast<long long>(before->total()),
              static_cast<long long>(after->total()), saved);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 1;
  bool verbose = false;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-v") {
      verbose = true;
    } else if (arg == "--batch" && i + 1 < argc) {
      batch = std::atoll(argv[++i]);
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.empty()) {
    std::string root = SLIMPACK_SOURCE_DIR;
    paths = {root + "/examples/digits-cnn/model.onnx",
             root + "/tests/testdata/models/torch_encoder_block.onnx",
             root + "/tests/testdata/models/torch_llama_block.onnx",
             root + "/tests/testdata/models/torch_mlp.onnx",
             root + "/tests/testdata/models/paddle_style.onnx",
             root + "/tests/testdata/models/paddle_hardswish_ln.onnx"};
  }
  int failures = 0;
  for (const std::string& path : paths) failures += Report(path, batch, verbose);
  return failures == 0 ? 0 : 1;
}
