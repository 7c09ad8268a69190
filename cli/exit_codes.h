// Exit codes every slimpack subcommand uses, so CI pipelines can gate on them.
#ifndef SLIMPACK_CLI_EXIT_CODES_H_
#define SLIMPACK_CLI_EXIT_CODES_H_

namespace slimpack::cli {

constexpr int kExitOk = 0;
constexpr int kExitInputError = 1;  // the input, recipe or data is bad
constexpr int kExitUsage = 2;       // bad flags or arguments
constexpr int kExitGateFailed = 3;  // `slimpack report --gate`: a rule failed

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_EXIT_CODES_H_
