// Fuzzes the ONNX import the CLI runs on a .onnx path
// (onnx_format::ImportOnnx with default options: ModelProto parse, opset
// checks and the version converter for old opsets, window attributes, shape
// inference, graph and tensor conversion, external data confined to the
// model's directory, the IR verifier). The model is written to the scratch
// directory, so any external data it names resolves there or nowhere.
#include <cstddef>
#include <cstdint>

#include "formats/onnx/onnx_importer.h"
#include "fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = slimpack::fuzz::WriteScratchFile("model.onnx", data, size);
  auto model = slimpack::onnx_format::ImportOnnx(path);
  if (!model.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const slimpack::ir::Tensor& t : model->graph.initializers()) {
    const uint8_t* bytes = t.data.data();
    for (uint64_t i = 0; i < t.data.size(); ++i) sink = sink ^ bytes[i];
  }
  return 0;
}
