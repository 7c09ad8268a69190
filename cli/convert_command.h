// `slimpack convert INPUT -o OUT`: import a model, cast float weights,
// write a shard artifact atomically.
#ifndef SLIMPACK_CLI_CONVERT_COMMAND_H_
#define SLIMPACK_CLI_CONVERT_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

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
  // Graph passes: "" = the recipe's list or the default pipeline,
  // "none" = no passes, else comma-separated names.
  std::string passes;
  bool verify_each = false;
  bool print_ir_after_all = false;
  std::vector<std::string> print_ir_after;
  // Quantization: a scheme name (int8, int4, int4-g32-asym, ...), "" = the
  // recipe's. --group/--asym refine a bare int4; --algo picks the algorithm.
  std::string quant;
  int64_t group = 0;
  bool asym = false;
  std::string algo;
  std::vector<std::string> calib;
  int64_t calib_samples = 0;
  // Size-target planner: "3.8GB" / "3.5GiB" for the whole artifact, or an
  // average bits per weight over the quantized tensors (0 = unset).
  std::string target_size;
  double target_bpw = 0;
  // After writing: `slimpack report` of the artifact against the input on
  // report_data, into report_dir, gated by `gate` (exit 3 when it fails).
  std::string report_dir;
  std::vector<std::string> report_data;
  std::string gate;
  // Structured pruning: ratio as typed ("" = off), criterion
  // l1|l2|activation|loss, target mlp|heads|both, least-squares refit,
  // per-layer rules file (passes/prune_rules.h), parameter budget as typed
  // (fraction kept or count, "" = none).
  // Weight sparsity (passes/sparsify.h): ratio as typed ("" = off; 2:4
  // implies 0.5), pattern unstructured|2:4, criterion magnitude|wanda.
  std::string sparsity;
  std::string sparsity_pattern;
  std::string sparsity_criterion;
  std::string prune;
  std::string prune_criterion;
  std::string prune_target;
  bool prune_refit = false;
  std::string prune_rules;
  std::string prune_budget_params;
};

// Returns a process exit code (exit_codes.h): 2 for a malformed flag value
// (--shard-size), 1 for anything wrong with the input, recipe or output,
// 3 when --report's --gate fails (the artifact is written either way).
// Progress goes to stderr (a live line on a terminal, plain lines with -v),
// the summary to stdout.
int RunConvert(const ConvertOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_CONVERT_COMMAND_H_
