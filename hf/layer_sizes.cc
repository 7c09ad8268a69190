// Reads per-layer decoder sizes from config.json (hf/layer_sizes.h).
#include "hf/layer_sizes.h"

#include "nlohmann/json.hpp"

namespace slimpack::hf {

absl::StatusOr<std::vector<LayerSizes>> ReadLayerSizes(const ir::ArchitectureInfo& a,
                                                       const std::string& source) {
  std::vector<LayerSizes> out(a.num_layers > 0 ? a.num_layers : 0,
                              {a.intermediate_size, a.num_heads, a.num_kv_heads});
  if (a.config_json.empty()) return out;
  const nlohmann::json cfg =
      nlohmann::json::parse(a.config_json, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded() || !cfg.is_object()) return out;  // config_checks reports it
  struct Field {
    const char* name;
    int64_t LayerSizes::*member;
    int64_t max;
  };
  const Field fields[] = {{kIntermediateSizePerLayer, &LayerSizes::intermediate_size,
                           a.intermediate_size},
                          {kNumAttentionHeadsPerLayer, &LayerSizes::num_heads, a.num_heads},
                          {kNumKeyValueHeadsPerLayer, &LayerSizes::num_kv_heads, a.num_kv_heads}};
  for (const Field& f : fields) {
    auto it = cfg.find(f.name);
    if (it == cfg.end() || it->is_null()) continue;
    if (!it->is_array() || static_cast<int64_t>(it->size()) != a.num_layers) {
      return absl::InvalidArgumentError(
          source + ": config.json field '" + f.name + "' must be a list of " +
          std::to_string(a.num_layers) + " (num_hidden_layers) integers, found " +
          it->dump());
    }
    for (int64_t l = 0; l < a.num_layers; ++l) {
      const nlohmann::json& v = (*it)[l];
      if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 ||
          v.get<uint64_t>() > static_cast<uint64_t>(f.max)) {
        return absl::InvalidArgumentError(
            source + ": config.json field '" + f.name + "'[" + std::to_string(l) +
            "] must be a positive integer up to " + std::to_string(f.max) +
            " (the single value), found " + v.dump());
      }
      out[l].*f.member = v.get<int64_t>();
    }
  }
  for (int64_t l = 0; l < a.num_layers; ++l) {
    if (out[l].num_heads % out[l].num_kv_heads != 0) {
      return absl::InvalidArgumentError(
          source + ": config.json layer " + std::to_string(l) + " has " +
          std::to_string(out[l].num_heads) + " attention heads, not a multiple of its " +
          std::to_string(out[l].num_kv_heads) + " KV heads");
    }
  }
  return out;
}

}  // namespace slimpack::hf
