#include "converter/gguf_recipe.h"

#include "absl/strings/str_cat.h"
#include "converter/recipe.h"
#include "export/gguf_types.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

absl::Status Bad(const std::string& path, const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", where, ": ", what));
}

std::string TypeOf(const nlohmann::json& v) {
  return v.is_string() ? "string" : v.is_object() ? "object" : v.is_array() ? "array" : "other";
}

}  // namespace

absl::StatusOr<GgmlRecipe> ReadGgmlRecipe(const std::string& path) {
  ASSIGN_OR_RETURN(Recipe recipe, ReadRecipeFile(path));
  return GgmlRecipeFrom(recipe, path);
}

absl::StatusOr<GgmlRecipe> GgmlRecipeFrom(const Recipe& recipe, const std::string& path) {
  const char* other = recipe.dtype        ? "dtype"
                      : recipe.shard_size ? "shard_size"
                      : recipe.passes     ? "passes"
                      : recipe.prune      ? "prune"
                      : recipe.sparsity   ? "sparsity"
                                          : nullptr;
  if (other != nullptr) {
    return Bad(path, other,
               "not supported with a llama-quantize scheme (a GGUF-type recipe has \"quant\" with "
               "\"scheme\", \"algorithm\" and \"rules\")");
  }
  GgmlRecipe out;
  if (!recipe.quant) return out;
  for (const auto& [key, value] : recipe.quant->items()) {
    if (key == "scheme" || key == "algorithm") {
      if (!value.is_string()) return Bad(path, "quant." + key, "expected a string, found " + TypeOf(value));
      (key == "scheme" ? out.scheme : out.algorithm) = value.get<std::string>();
    } else if (key == "rules") {
      if (!value.is_array()) return Bad(path, "quant.rules", "expected an array, found " + TypeOf(value));
    } else if (key == "calib_samples") {
      if (!value.is_number_integer() || value.get<int64_t>() <= 0) {
        return Bad(path, "quant.calib_samples", "expected a positive integer, found " + value.dump());
      }
      out.calib_samples = value.get<int64_t>();
    } else if (key == "target_bpw") {
      if (!value.is_number() || !(value.get<double>() > 0) || value.get<double>() > 16) {
        return Bad(path, "quant.target_bpw", "expected a number of bits in (0, 16], found " +
                                                 value.dump());
      }
      out.target_bpw = value.get<double>();
    } else {
      return Bad(path, "quant." + key,
                 "not supported with a llama-quantize scheme (keys: scheme, algorithm, rules, "
                 "target_bpw, calib_samples)");
    }
  }
  if (!out.scheme.empty() && !gguf_export::ParsePreset(out.scheme).ok()) {
    return Bad(path, "quant.scheme", std::string(gguf_export::ParsePreset(out.scheme).status().message()));
  }
  if (!out.algorithm.empty() && out.algorithm != "rtn" && out.algorithm != "imatrix" &&
      out.algorithm != "gptq" && out.algorithm != "awq") {
    return Bad(path, "quant.algorithm",
               "'" + out.algorithm + "' is not one of rtn, imatrix, gptq, awq");
  }
  const nlohmann::json empty = nlohmann::json::array();
  const nlohmann::json& rules = recipe.quant->contains("rules") ? (*recipe.quant)["rules"] : empty;
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string where = absl::StrCat("quant.rules[", i, "]");
    const nlohmann::json& rule = rules[i];
    if (!rule.is_object()) return Bad(path, where, "expected an object, found " + TypeOf(rule));
    for (const auto& [key, value] : rule.items()) {
      if (key != "match" && key != "scheme") {
        return Bad(path, where + "." + key,
                   "not supported with a llama-quantize scheme (a rule has \"match\", a regex "
                   "over tensor names, and \"scheme\", a GGUF tensor type)");
      }
      if (!value.is_string()) return Bad(path, where + "." + key, "expected a string, found " + TypeOf(value));
    }
    if (!rule.contains("match") || !rule.contains("scheme")) {
      return Bad(path, where, "needs \"match\" and \"scheme\"");
    }
    const std::string match = rule["match"].get<std::string>();
    const std::string type = rule["scheme"].get<std::string>();
    absl::StatusOr<gguf_export::TypeOverride> parsed = gguf_export::ParseTypeOverride(match, type);
    if (!parsed.ok()) return Bad(path, where, std::string(parsed.status().message()));
    out.rules.emplace_back(match, type);
  }
  return out;
}

}  // namespace slimpack::converter
