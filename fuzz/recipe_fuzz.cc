// Fuzzes recipe JSON as `slimpack convert --recipe` reads it
// (converter::ParseRecipe: strict JSON, known keys, typed values), then
// writes an accepted recipe back as the manifest records it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "converter/recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto recipe = slimpack::converter::ParseRecipe(text, "recipe.json");
  if (!recipe.ok()) return 0;
  const std::string dumped = slimpack::converter::RecipeToJson(*recipe).dump();
  (void)dumped;
  return 0;
}
