// `slimpack convert INPUT -o OUT`: import a model, cast float weights,
// write a shard artifact atomically.
#ifndef SLIMPACK_CLI_CONVERT_COMMAND_H_
#define SLIMPACK_CLI_CONVERT_COMMAND_H_

#include <string>

namespace slimpack::cli {

struct ConvertOptions {
  std::string input;
  std::string output;
  std::string dtype;        // "" = from the recipe, else keep
  std::string shard_size;   // "" = from the recipe, else 256M
  std::string recipe_path;  // "" = none
  int threads = 0;          // 0 = one per core
  bool force = false;
  bool verbose = false;
};

// Returns a process exit code (exit_codes.h): 2 for a malformed flag value
// (--shard-size), 1 for anything wrong with the input, recipe or output.
// Progress goes to stderr (a live line on a terminal, plain lines with -v),
// the summary to stdout.
int RunConvert(const ConvertOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_CONVERT_COMMAND_H_
