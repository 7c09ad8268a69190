// Fuzzes the import of already-quantized checkpoints the CLI runs on an HF
// checkpoint directory (formats/safetensors/prequantized.h): the first input
// byte picks one of the quantization configs below (written as config.json's
// quantization_config), the rest is model.safetensors. ImportSafetensors
// then unpacks every packed linear (GPTQ / AWQ / compressed-tensors); every
// byte of every resulting tensor is read, so an unpacked tensor whose bytes
// disagree with its shape faults under ASan.
#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/safetensors/checkpoint_importer.h"
#include "fuzz/fuzz_temp_dir.h"

namespace {

// config.json texts: an unknown model_type, so weight roles (and their shape
// checks) do not stop an input before the unpacking has run.
constexpr const char* kConfigs[] = {
    R"({"model_type": "fuzz", "quantization_config": {"quant_method": "gptq", "bits": 4,
        "group_size": 4, "desc_act": true, "sym": false, "checkpoint_format": "gptq"}})",
    R"({"model_type": "fuzz", "quantization_config": {"quant_method": "gptq", "bits": 8,
        "group_size": -1, "checkpoint_format": "gptq_v2"}})",
    R"({"model_type": "fuzz", "quantization_config": {"quant_method": "gptq", "bits": 3,
        "group_size": 16, "checkpoint_format": "gptq"}})",
    R"({"model_type": "fuzz", "quantization_config": {"quant_method": "gptq", "bits": 2,
        "group_size": 8, "checkpoint_format": "gptq_v2"}})",
    R"({"model_type": "fuzz", "quantization_config": {"quant_method": "awq", "bits": 4,
        "group_size": 4, "zero_point": true, "version": "gemm"}})",
    R"({"model_type": "fuzz", "quantization_config": {"quant_method": "compressed-tensors",
        "format": "pack-quantized", "config_groups": {"g": {"weights": {"num_bits": 4,
        "type": "int", "symmetric": true, "strategy": "group", "group_size": 8}}}}})",
    R"({"model_type": "fuzz", "quantization_config": {"quant_method": "compressed-tensors",
        "format": "pack-quantized", "config_groups": {"g": {"weights": {"num_bits": 8,
        "type": "int", "symmetric": false, "strategy": "channel"}}}}})",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* config = kConfigs[data[0] % (sizeof(kConfigs) / sizeof(kConfigs[0]))];
  slimpack::fuzz::WriteScratchFile("config.json", reinterpret_cast<const uint8_t*>(config),
                                   std::char_traits<char>::length(config));
  const std::string path = slimpack::fuzz::WriteScratchFile("model.safetensors", data + 1, size - 1);
  auto model = slimpack::safetensors::ImportSafetensors(path);
  if (!model.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const slimpack::ir::Tensor& t : model->graph.initializers()) {
    const uint8_t* bytes = t.data.data();
    for (uint64_t i = 0; i < t.data.size(); ++i) sink = sink ^ bytes[i];
  }
  return 0;
}
