// Fuzzes the safetensors import the CLI runs on a .safetensors path
// (safetensors::ImportSafetensors: header validation, then every tensor as a
// view into the mapping; no config.json beside it, so roles are not tagged).
// Every byte of every tensor view is read, so a view past the mapping faults.
#include <cstddef>
#include <cstdint>

#include "formats/safetensors/checkpoint_importer.h"
#include "fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      slimpack::fuzz::WriteScratchFile("model.safetensors", data, size);
  auto model = slimpack::safetensors::ImportSafetensors(path);
  if (!model.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const slimpack::ir::Tensor& t : model->graph.initializers()) {
    const uint8_t* bytes = t.data.data();
    for (uint64_t i = 0; i < t.data.size(); ++i) sink = sink ^ bytes[i];
  }
  return 0;
}
