// Recipes and --tensor-type for llama-quantize types: which ggml type each
// matrix gets when the preset's rules are not what the user wants.
//
//   {"quant": {"scheme": "q4_k_m", "algorithm": "imatrix",
//              "rules": [{"match": "v_proj|down_proj", "scheme": "q6_k"}]}}
//
// scheme: a llama-quantize preset (export/gguf_types.h); algorithm: rtn,
// imatrix, gptq or awq (--algo wins); rules: first match wins over the
// preset's per-tensor rules (export/gguf_types.h TypeOverride), after any
// --tensor-type flags; or target_bpw: the size planner picks every matrix's
// type (export/gguf_size_plan.h; --target-bpw wins); calib_samples: how
// many calibration windows (--calib-samples wins). Nothing else is
// accepted: a key slimpack's own schemes understand (op/role rules,
// candidates, dtype ...) is refused by name rather than ignored.
#ifndef SLIMPACK_CONVERTER_GGUF_RECIPE_H_
#define SLIMPACK_CONVERTER_GGUF_RECIPE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/recipe.h"

namespace slimpack::converter {

struct GgmlRecipe {
  std::string scheme;     // "" when the recipe leaves it to --quant
  std::string algorithm;  // "" when the recipe leaves it to --algo
  std::vector<std::pair<std::string, std::string>> rules;  // (match, type name)
  double target_bpw = 0;  // 0: none (the size planner chooses every type)
  int64_t calib_samples = 0;  // 0: the default (--calib-samples wins)
};

// A parsed recipe read as one for llama-quantize types; `source` ("FILE" or
// "DIR/manifest.json producer.recipe") prefixes every error, which names the
// key or rule (InvalidArgument).
absl::StatusOr<GgmlRecipe> GgmlRecipeFrom(const Recipe& recipe, const std::string& source);
// Reads `path` with converter/recipe.h's reader, then GgmlRecipeFrom.
absl::StatusOr<GgmlRecipe> ReadGgmlRecipe(const std::string& path);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_GGUF_RECIPE_H_
