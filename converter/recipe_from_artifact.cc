#include "converter/recipe_from_artifact.h"

#include "formats/shard/loader/absl_adapter.h"
#include "formats/shard/loader/artifact.h"
#include "support/small_file.h"
#include "support/status_macros.h"
#include "support/strict_json.h"

namespace slimpack::converter {
namespace {

// The format's manifest cap (formats/shard/format.h, which this room may not
// include); the loader has already refused a larger manifest.
constexpr uint64_t kMaxManifestBytes = 16ull << 20;

std::string Describe(const shard_writer::NamedDigest& d) {
  return "'" + d.file + "' (" + std::to_string(d.size) + " bytes, sha256 " + d.sha256 + ")";
}

}  // namespace

absl::StatusOr<ArtifactRecipe> ReadArtifactRecipe(const std::string& dir) {
  // The loader checks the manifest's own hash and structure first: a
  // recipe from a damaged manifest would reproduce nothing.
  RETURN_IF_ERROR(loader::ToAbslStatusOr(loader::Artifact::Open(dir)).status());
  ArtifactRecipe out;
  out.source = dir + "/manifest.json";
  ASSIGN_OR_RETURN(std::string text, support::ReadSmallFile(out.source, kMaxManifestBytes));
  ASSIGN_OR_RETURN(nlohmann::json manifest, support::ParseStrictJson(text, out.source, 64));
  const auto producer = manifest.find("producer");
  if (producer == manifest.end() || !producer->is_object()) {
    return absl::InvalidArgumentError(out.source + ": no producer object");
  }
  const auto recipe = producer->find("recipe");
  if (recipe == producer->end() || !recipe->is_object()) {
    return absl::InvalidArgumentError(out.source + ": producer.recipe is missing or not an object");
  }
  ASSIGN_OR_RETURN(out.recipe, ParseRecipe(recipe->dump(), out.source + " producer.recipe"));
  const auto calibration = producer->find("calibration");
  if (calibration == producer->end()) return out;
  if (!calibration->is_array()) {
    return absl::InvalidArgumentError(out.source + ": producer.calibration is " +
                                      support::DescribeJson(*calibration) + ", expected an array");
  }
  for (size_t i = 0; i < calibration->size(); ++i) {
    const nlohmann::json& e = (*calibration)[i];
    const std::string where = out.source + ": producer.calibration[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("file") || !e["file"].is_string() || !e.contains("size") ||
        !e["size"].is_number_unsigned() || !e.contains("sha256") || !e["sha256"].is_string()) {
      return absl::InvalidArgumentError(where + " must be {file, size, sha256}, found " +
                                        support::DescribeJson(e));
    }
    out.calibration.push_back(
        {e["file"].get<std::string>(), e["size"].get<uint64_t>(), e["sha256"].get<std::string>()});
  }
  return out;
}

absl::Status CheckSameCalibration(const ArtifactRecipe& recorded,
                                  const std::vector<shard_writer::NamedDigest>& used) {
  const auto& want = recorded.calibration;
  for (size_t i = 0; i < want.size() && i < used.size(); ++i) {
    if (want[i].file != used[i].file || want[i].size != used[i].size ||
        want[i].sha256 != used[i].sha256) {
      return absl::FailedPreconditionError(
          "--calib file " + std::to_string(i + 1) + " is " + Describe(used[i]) + ", but " +
          recorded.source + " was calibrated on " + Describe(want[i]) +
          " (the same recipe on other data gives other bytes; use --recipe to mean that)");
    }
  }
  if (want.size() != used.size()) {
    return absl::FailedPreconditionError(
        "--calib gives " + std::to_string(used.size()) + " data files, but " + recorded.source +
        " was calibrated on " + std::to_string(want.size()) +
        (want.empty() ? "" : " (first: " + Describe(want[0]) + ")"));
  }
  return absl::OkStatus();
}

}  // namespace slimpack::converter
