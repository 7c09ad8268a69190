// `slimpack convert INPUT -o OUT`: import a model, cast float weights,
// write a shard artifact atomically.
#ifndef SLIMPACK_CLI_CONVERT_COMMAND_H_
#define SLIMPACK_CLI_CONVERT_COMMAND_H_

#include "converter/convert_request.h"

namespace slimpack::cli {

// The flags, as typed; converter::BuildConvertRequest merges them over the
// recipe and checks them.
using ConvertOptions = converter::ConvertFlags;

// Returns a process exit code (exit_codes.h): 2 for a malformed flag value
// (--shard-size), 1 for anything wrong with the input, recipe or output,
// 3 when --report's --gate fails (the artifact is written either way).
// Progress goes to stderr (a live line on a terminal, plain lines with -v),
// the summary to stdout.
int RunConvert(const ConvertOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_CONVERT_COMMAND_H_
