// `slimpack inspect MODEL [--json]`: a human or machine summary of a model.
#ifndef SLIMPACK_CLI_INSPECT_COMMAND_H_
#define SLIMPACK_CLI_INSPECT_COMMAND_H_

#include <string>

namespace slimpack::cli {

struct InspectOptions {
  std::string path;
  bool json = false;
};

// Returns a process exit code (see exit_codes.h); errors go to stderr.
int RunInspect(const InspectOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_INSPECT_COMMAND_H_
