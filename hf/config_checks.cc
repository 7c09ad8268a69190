// config.json is re-read here (ArchitectureInfo keeps only the sizes) with
// exceptions off, as everywhere in the project.
#include "hf/config_checks.h"

#include "nlohmann/json.hpp"

namespace slimpack::hf {

absl::Status CheckUnsupportedOptions(const ir::Model& checkpoint,
                                     std::vector<std::string>& warnings) {
  const ir::ArchitectureInfo& a = *checkpoint.architecture;
  const std::string where = checkpoint.source_path + ": config.json";
  auto unsupported = [&](const std::string& what) {
    return absl::UnimplementedError(where + ": " + what +
                                    " is not supported by the decoder graph builder");
  };
  for (const ir::Tensor& t : checkpoint.graph.initializers()) {
    const std::string& n = t.name;
    const bool bias = n.size() > 5 && n.compare(n.size() - 5, 5, ".bias") == 0;
    if (bias && (n.find(".o_proj.") != std::string::npos || n.find(".mlp.") != std::string::npos)) {
      return absl::UnimplementedError(checkpoint.source_path + ": bias tensor '" + n +
                                      "' is not supported (only q/k/v projection biases)");
    }
  }
  if (a.config_json.empty()) return absl::OkStatus();
  const nlohmann::json c = nlohmann::json::parse(a.config_json, nullptr, false);
  if (c.is_discarded() || !c.is_object()) {
    return absl::InvalidArgumentError(where + " is not a JSON object");
  }
  auto it = c.find("rope_scaling");
  if (it != c.end() && !it->is_null()) {
    std::string type = "?";
    if (it->is_object()) {
      for (const char* key : {"rope_type", "type"}) {
        auto t = it->find(key);
        if (t != it->end() && t->is_string()) type = t->get<std::string>();
      }
    }
    return unsupported("rope_scaling (type '" + type + "')");
  }
  it = c.find("hidden_act");
  if (it != c.end() && !(it->is_string() && it->get<std::string>() == "silu")) {
    return unsupported("hidden_act " + it->dump() + " (supported: \"silu\")");
  }
  it = c.find("mlp_bias");
  if (it != c.end() && it->is_boolean() && it->get<bool>()) return unsupported("mlp_bias true");
  it = c.find("sliding_window");
  auto use = c.find("use_sliding_window");
  const bool sliding = it != c.end() && it->is_number_integer() &&
                       (a.model_type == "mistral" ||
                        (use != c.end() && use->is_boolean() && use->get<bool>()));
  if (sliding) {
    warnings.push_back("config.json sliding_window " + it->dump() +
                       " is not applied: logits match HF only for sequences up to that length");
  }
  return absl::OkStatus();
}

}  // namespace slimpack::hf
