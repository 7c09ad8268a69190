// `slimpack convert` as a library call: preflight the output, import the
// input, run the stages (converter/convert_stages.h), write the artifact.
// The CLI adds flag parsing, progress drawing and the optional report.
#ifndef SLIMPACK_CONVERTER_CONVERT_H_
#define SLIMPACK_CONVERTER_CONVERT_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "absl/status/statusor.h"
#include "converter/convert_request.h"
#include "formats/shard/writer/artifact_writer.h"

namespace slimpack::converter {

struct ConvertCallbacks {
  // Writer progress (bytes and files); null: none.
  std::function<void(const shard_writer::WriteProgress&)> progress;
  // Test-only crash injection at writer phases (shard_writer::ArtifactOptions).
  std::function<void(std::string_view phase, uint64_t bytes)> fault_hook;
};

// Runs `request` (from BuildConvertRequest). Import warnings go to
// request.stages.log with the stage lines, in the order they happen. The
// output is written atomically: on error it is the previous artifact or
// absent.
absl::StatusOr<shard_writer::ArtifactSummary> Convert(ConvertRequest request,
                                                      const ConvertCallbacks& callbacks);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_CONVERT_H_
