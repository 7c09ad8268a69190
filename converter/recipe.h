// Conversion recipes: what `slimpack convert` does to a model, read
// strictly from a JSON file (--recipe), overridden by flags, and recorded in
// the artifact's producer.recipe so re-running it reproduces the artifact.
//
// Adding a key (later issues: passes, quantization): add a field to Recipe,
// one row to kRecipeKeys in recipe.cc (name, parser), and its output to
// RecipeToJson. Unknown keys stay errors, so a typo never silently does
// nothing.
#ifndef SLIMPACK_CONVERTER_RECIPE_H_
#define SLIMPACK_CONVERTER_RECIPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/dtype.h"
#include "nlohmann/json.hpp"

namespace slimpack::converter {

struct Recipe {
  // "dtype": "f32" | "f16" | "bf16": the stored type of float weights
  // (f32/f16/bf16 tensors; others are untouched). Unset: keep as imported.
  std::optional<ir::DType> dtype;
  // "shard_size": the cap per shard file in bytes, an integer or a string
  // with a K/M/G/T suffix ("256M", binary multiples). Unset: the default.
  std::optional<uint64_t> shard_size;
  // "passes": graph pass names, run in order (the CLI checks them against
  // the pass registry). Unset: the default pipeline for the input kind;
  // [] runs none. The manifest records the list that ran.
  std::optional<std::vector<std::string>> passes;
  // "quant": weight / activation quantization (quantize/quant_rules.h parses
  // it strictly; kept as JSON here because the converter sits below the
  // passes in the dependency order). Must be an object.
  std::optional<nlohmann::json> quant;
  // "prune": structured pruning options (prune/decoder/prune_structured.h parses
  // them strictly). Must be an object.
  std::optional<nlohmann::json> prune;
  // "sparsity": unstructured / 2:4 weight sparsity (prune/sparsify.h parses
  // it strictly). Must be an object.
  std::optional<nlohmann::json> sparsity;
};

// Recipe keys, sorted, for messages and --help.
std::vector<std::string> RecipeKeys();

// Parses recipe JSON. `file` prefixes every error. InvalidArgument: not
// UTF-8, not JSON, duplicate key, not an object, an unknown key (naming it
// and listing the known ones), a value of the wrong type or out of range
// (naming the key and the value found). Never throws.
absl::StatusOr<Recipe> ParseRecipe(std::string_view text,
                                   const std::string& file);
// Reads and parses `path` (at most 1 MiB). NotFound if it does not exist.
absl::StatusOr<Recipe> ReadRecipeFile(const std::string& path);

// The canonical JSON object recorded in the manifest: only the keys that
// are set, plus "passes".
nlohmann::json RecipeToJson(const Recipe& recipe);

// "268435456", "256M", "1g", "64K" -> bytes (binary multiples).
// InvalidArgument naming the text on syntax errors or overflow.
absl::StatusOr<uint64_t> ParseByteSize(std::string_view text);

// "f32" | "f16" | "bf16". InvalidArgument naming the value and the choices.
absl::StatusOr<ir::DType> ParseTargetDType(std::string_view text);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_RECIPE_H_
