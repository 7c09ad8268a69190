#include "converter/stats_file.h"

#include "support/status_macros.h"

namespace slimpack::converter {

absl::StatusOr<safetensors::SafetensorsFile> ReadStatsFile(const std::string& path,
                                                            const StatsFileKind& kind) {
  ASSIGN_OR_RETURN(safetensors::SafetensorsFile file, safetensors::ReadSafetensorsFile(path));
  // "a Hessian file" -> "Hessian file" for the version message.
  const std::string noun = kind.noun;
  const std::string bare = noun.substr(noun.find(' ') + 1);
  auto format = file.metadata.find("format");
  if (format == file.metadata.end() || format->second != kind.format) {
    return absl::InvalidArgumentError(path + ": not " + noun +
                                      " (its safetensors metadata has no \"format\": \"" +
                                      kind.format + "\"; write one with `slimpack calibrate " +
                                      kind.flag + "`)");
  }
  auto version = file.metadata.find("version");
  if (version == file.metadata.end() || version->second != kind.version) {
    return absl::UnimplementedError(
        path + ": " + bare + " version '" +
        (version == file.metadata.end() ? std::string("(none)") : version->second) +
        "' is not supported (supported: " + kind.version + ")");
  }
  return file;
}

}  // namespace slimpack::converter
