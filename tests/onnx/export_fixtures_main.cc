// Exports every fixture model in every layout to <out_dir>/<model>_<layout>/
// model.onnx, for check_exported.py (onnx.checker in python) to validate.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "formats/onnx/onnx_importer.h"
#include "formats/onnx/onnx_writer.h"
#include "tests/onnx/onnx_fixture_models.h"

int main(int argc, char** argv) {
  using namespace slimpack::onnx_format;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  std::filesystem::create_directories(root + "/sources", ec);
  OnnxExportOptions external;
  external.use_external_data = true;
  external.external_data_threshold = 64;
  // Threshold 0 also moves tensor attributes and subgraph tensors out.
  OnnxExportOptions all_external = external;
  all_external.external_data_threshold = 0;
  const std::pair<const char*, OnnxExportOptions> layouts[] = {
      {"embedded", OnnxExportOptions()},
      {"external", external},
      {"all_external", all_external}};
  int written = 0;
  for (const auto& fixture : testing::FixtureModels()) {
    const std::string src_dir = root + "/sources/" + fixture.name;
    std::filesystem::create_directories(src_dir, ec);
    fixture.write(src_dir);
    auto model = ImportOnnx(src_dir + "/source.onnx");
    if (!model.ok()) {
      std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
      return 1;
    }
    for (const auto& [layout, options] : layouts) {
      const std::string dir = root + "/" + fixture.name + "_" + layout;
      std::filesystem::create_directories(dir, ec);
      absl::Status s = ExportOnnx(*model, dir + "/model.onnx", options);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
      ++written;
    }
  }
  std::printf("exported %d models under %s\n", written, root.c_str());
  return 0;
}
