// Precomputed calibration statistics stored as safetensors (Hessians for
// GPTQ, captured inputs for AWQ): the metadata names the kind of file and
// its version, so another safetensors file (a checkpoint, another kind) is
// refused before any tensor is read as statistics.
#ifndef SLIMPACK_CONVERTER_STATS_FILE_H_
#define SLIMPACK_CONVERTER_STATS_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "formats/safetensors/safetensors_reader.h"

namespace slimpack::converter {

struct StatsFileKind {
  const char* format;   // metadata "format", e.g. "slimpack-hessians"
  const char* version;  // the metadata "version" read
  const char* noun;     // "a Hessian file"
  const char* flag;     // the `slimpack calibrate` flag that writes one
};

// Reads `path` (safetensors::ReadSafetensorsFile's errors) and checks its
// metadata: InvalidArgument "PATH: not NOUN (...; write one with
// `slimpack calibrate FLAG`)" for another format, Unimplemented for another
// version, both naming the file.
absl::StatusOr<safetensors::SafetensorsFile> ReadStatsFile(const std::string& path,
                                                            const StatsFileKind& kind);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_STATS_FILE_H_
