// Fuzzes recipe JSON as `slimpack convert --recipe` reads it
// (converter::ParseRecipe: strict JSON, known keys, typed values), then
// writes an accepted recipe back as the manifest records it, and reads it
// as a recipe for llama-quantize types (converter::GgmlRecipeFrom: presets,
// algorithms, rules whose "match" regexes support::Regex compiles).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "converter/gguf_recipe.h"
#include "converter/recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto recipe = slimpack::converter::ParseRecipe(text, "recipe.json");
  if (!recipe.ok()) return 0;
  const std::string dumped = slimpack::converter::RecipeToJson(*recipe).dump();
  (void)dumped;
  auto ggml = slimpack::converter::GgmlRecipeFrom(*recipe, "recipe.json");
  if (ggml.ok()) {
    // Every accepted rule is a (match, type) pair of non-empty strings.
    for (const auto& [match, type] : ggml->rules) {
      if (type.empty()) __builtin_trap();
    }
  }
  return 0;
}
