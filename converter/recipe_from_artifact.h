// `convert --recipe-from ARTIFACT`: the recipe and calibration files an
// artifact's manifest records (producer.recipe, producer.calibration), so
// converting the same inputs again gives the same bytes, and different
// calibration data is named instead of silently giving other bytes.
#ifndef SLIMPACK_CONVERTER_RECIPE_FROM_ARTIFACT_H_
#define SLIMPACK_CONVERTER_RECIPE_FROM_ARTIFACT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "converter/recipe.h"
#include "formats/shard/writer/manifest_json.h"

namespace slimpack::converter {

struct ArtifactRecipe {
  std::string source;  // "DIR/manifest.json": names the recipe in errors
  Recipe recipe;
  // producer.calibration in reading order; empty when none was used.
  std::vector<shard_writer::NamedDigest> calibration;
};

// Validates `dir` with the loader (checksummed manifest), then parses
// producer.recipe with the --recipe parser. Errors name the manifest and
// the field: a missing or non-object recipe, a malformed calibration entry.
absl::StatusOr<ArtifactRecipe> ReadArtifactRecipe(const std::string& dir);

// OK when `used` (the digests of this run's --calib files) equals the
// recorded list. Otherwise FailedPrecondition naming the first file that
// differs (name, size or SHA-256) or the count, and the artifact.
absl::Status CheckSameCalibration(const ArtifactRecipe& recorded,
                                  const std::vector<shard_writer::NamedDigest>& used);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_RECIPE_FROM_ARTIFACT_H_
