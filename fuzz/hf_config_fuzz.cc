// Fuzzes config.json as an HF checkpoint's importer and the decoder graph
// builder read it: hf::ParseHfConfig, then (on a checkpoint with no weights)
// the option and size checks the builder runs first, and the per-layer
// size lists (hf::ReadLayerSizes) when the sizes CheckDecoderSizes bounds
// before the builder reads the lists are in range (a weightless checkpoint
// never passes its per-layer weight checks, so those bounds are applied
// here; the layer count is capped at 4096 to keep each input fast).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hf/config_checks.h"
#include "hf/hf_config.h"
#include "hf/layer_sizes.h"
#include "ir/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto arch = slimpack::hf::ParseHfConfig(text, "config.json");
  if (!arch.ok()) return 0;
  slimpack::ir::Model model;
  model.source_path = "fuzz-checkpoint";
  model.architecture = *arch;
  std::vector<std::string> warnings;
  (void)slimpack::hf::CheckUnsupportedOptions(model, warnings);
  (void)slimpack::hf::CheckDecoderSizes(model);
  const auto in_range = [](int64_t v) { return v >= 1 && v <= slimpack::hf::kMaxArchitectureSize; };
  if (arch->num_layers >= 1 && arch->num_layers <= 4096 && in_range(arch->num_heads) &&
      in_range(arch->num_kv_heads) && in_range(arch->intermediate_size) &&
      arch->num_heads % arch->num_kv_heads == 0) {
    (void)slimpack::hf::ReadLayerSizes(*arch, model.source_path);
  }
  return 0;
}
