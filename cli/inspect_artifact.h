// `slimpack inspect` on an artifact directory: manifest summary, op
// histogram of the stored graph, quantized and sparse tensors.
#ifndef SLIMPACK_CLI_INSPECT_ARTIFACT_H_
#define SLIMPACK_CLI_INSPECT_ARTIFACT_H_

#include <string>

namespace slimpack::cli {

// Prints the summary (text, or one JSON document with `json`); returns an
// exit code (exit_codes.h).
int RunInspectArtifact(const std::string& path, bool json);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_INSPECT_ARTIFACT_H_
