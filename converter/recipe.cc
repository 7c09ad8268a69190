#include "converter/recipe.h"

#include <algorithm>
#include <cstdint>

#include "support/small_file.h"
#include "support/strict_json.h"
#include "formats/shard/writer/shard_plan.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxRecipeBytes = 1 << 20;
// A recipe is a flat object today; the limit leaves room for pass options.
constexpr int kMaxRecipeDepth = 16;

using KeyParser = absl::Status (*)(const json& value, const std::string& where,
                                   Recipe& recipe);

absl::Status ParseDTypeKey(const json& v, const std::string& where,
                           Recipe& recipe) {
  if (!v.is_string()) {
    return absl::InvalidArgumentError(
        where + " must be one of \"f32\", \"f16\", \"bf16\"; found " +
        support::DescribeJson(v));
  }
  auto dtype = ParseTargetDType(v.get<std::string>());
  if (!dtype.ok()) return Annotate(dtype.status(), where);
  recipe.dtype = *dtype;
  return absl::OkStatus();
}

absl::Status ParseShardSizeKey(const json& v, const std::string& where,
                               Recipe& recipe) {
  uint64_t bytes = 0;
  if (v.is_number_unsigned()) {
    bytes = v.get<uint64_t>();
  } else if (v.is_string()) {
    auto parsed = ParseByteSize(v.get<std::string>());
    if (!parsed.ok()) return Annotate(parsed.status(), where);
    bytes = *parsed;
  } else {
    return absl::InvalidArgumentError(
        where + " must be a byte count (an integer, or a string such as "
                "\"256M\"); found " + support::DescribeJson(v));
  }
  if (bytes < shard_writer::kMinShardSize ||
      bytes > (uint64_t{1} << 53)) {
    return absl::InvalidArgumentError(
        where + " is " + std::to_string(bytes) + " bytes; expected at least " +
        std::to_string(shard_writer::kMinShardSize) +
        " (1M) and at most 2^53");
  }
  recipe.shard_size = bytes;
  return absl::OkStatus();
}

absl::Status ParsePassesKey(const json& v, const std::string& where,
                            Recipe& recipe) {
  if (!v.is_array()) {
    return absl::InvalidArgumentError(where + " must be an array; found " +
                                      support::DescribeJson(v));
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      return absl::InvalidArgumentError(
          where + "[" + std::to_string(i) + "] must be a pass name string; found " +
          support::DescribeJson(v[i]));
    }
    names.push_back(v[i].get<std::string>());
  }
  recipe.passes = std::move(names);
  return absl::OkStatus();
}

absl::Status ParseQuantKey(const json& v, const std::string& where,
                           Recipe& recipe) {
  if (!v.is_object()) {
    return absl::InvalidArgumentError(where + " must be an object; found " +
                                      support::DescribeJson(v));
  }
  recipe.quant = v;
  return absl::OkStatus();
}

absl::Status ParsePruneKey(const json& v, const std::string& where,
                           Recipe& recipe) {
  if (!v.is_object()) {
    return absl::InvalidArgumentError(where + " must be an object; found " +
                                      support::DescribeJson(v));
  }
  recipe.prune = v;
  return absl::OkStatus();
}

absl::Status ParseSparsityKey(const json& v, const std::string& where,
                              Recipe& recipe) {
  if (!v.is_object()) {
    return absl::InvalidArgumentError(where + " must be an object; found " +
                                      support::DescribeJson(v));
  }
  recipe.sparsity = v;
  return absl::OkStatus();
}

struct RecipeKey {
  const char* name;
  KeyParser parse;
};

// Sorted by name.
constexpr RecipeKey kRecipeKeys[] = {
    {"dtype", ParseDTypeKey},
    {"passes", ParsePassesKey},
    {"prune", ParsePruneKey},
    {"quant", ParseQuantKey},
    {"shard_size", ParseShardSizeKey},
    {"sparsity", ParseSparsityKey},
};

std::string KnownKeys() {
  std::string out;
  for (const auto& k : kRecipeKeys) {
    if (!out.empty()) out += ", ";
    out += k.name;
  }
  return out;
}

}  // namespace

std::vector<std::string> RecipeKeys() {
  std::vector<std::string> out;
  for (const auto& k : kRecipeKeys) out.push_back(k.name);
  return out;
}

absl::StatusOr<ir::DType> ParseTargetDType(std::string_view text) {
  for (ir::DType t : {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16}) {
    if (text == ir::DTypeName(t)) return t;
  }
  return absl::InvalidArgumentError("dtype \"" + std::string(text) +
                                    "\" is not supported; expected f32, f16 "
                                    "or bf16");
}

absl::StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  const std::string shown = "size \"" + std::string(text) + "\"";
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  if (digits == 0) {
    return absl::InvalidArgumentError(
        shown + " is not a byte count (expected digits with an optional "
                "K, M, G or T suffix, e.g. 256M)");
  }
  uint64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(text[i] - '0'),
                               &value)) {
      return absl::InvalidArgumentError(shown + " overflows 64 bits");
    }
  }
  std::string_view suffix = text.substr(digits);
  int shift = 0;
  if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      case 'T': case 't': shift = 40; break;
      default: shift = -1;
    }
  } else if (!suffix.empty()) {
    shift = -1;
  }
  if (shift < 0) {
    return absl::InvalidArgumentError(
        shown + " has an unknown suffix \"" + std::string(suffix) +
        "\" (expected K, M, G or T)");
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) {
    return absl::InvalidArgumentError(shown + " overflows 64 bits");
  }
  return value << shift;
}

absl::StatusOr<Recipe> ParseRecipe(std::string_view text,
                                   const std::string& file) {
  ASSIGN_OR_RETURN(json j, support::ParseStrictJson(text, file,
                                                        kMaxRecipeDepth));
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        file + ": a recipe is a JSON object; found " +
        support::DescribeJson(j));
  }
  Recipe recipe;
  for (const auto& [key, value] : j.items()) {
    const RecipeKey* handler = nullptr;
    for (const auto& k : kRecipeKeys) {
      if (key == k.name) handler = &k;
    }
    if (!handler) {
      return absl::InvalidArgumentError(file + ": unknown key '" + key +
                                        "' (known keys: " + KnownKeys() + ")");
    }
    RETURN_IF_ERROR(handler->parse(value, file + ": '" + key + "'", recipe));
  }
  return recipe;
}

absl::StatusOr<Recipe> ReadRecipeFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text,
                   support::ReadSmallFile(path, kMaxRecipeBytes));
  return ParseRecipe(text, path);
}

json RecipeToJson(const Recipe& recipe) {
  json out = json::object();
  if (recipe.dtype) out["dtype"] = std::string(ir::DTypeName(*recipe.dtype));
  out["passes"] = recipe.passes.value_or(std::vector<std::string>{});
  if (recipe.prune) out["prune"] = *recipe.prune;
  if (recipe.quant) out["quant"] = *recipe.quant;
  if (recipe.shard_size) out["shard_size"] = *recipe.shard_size;
  if (recipe.sparsity) out["sparsity"] = *recipe.sparsity;
  return out;
}

}  // namespace slimpack::converter
