// The model-changing stages of `slimpack convert` between import and write:
// structured pruning (passes/prune_structured.h), graph passes (passes/pipeline.h), static W8A8 quantization and weight
// quantization (passes/quantize_weights.h). Each stage adds a record to the
// manifest's producer.passes (options and statistics, never timings).
#ifndef SLIMPACK_CLI_CONVERT_STAGES_H_
#define SLIMPACK_CLI_CONVERT_STAGES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/ir/graph.h"
#include "nlohmann/json.hpp"
#include "passes/prune_structured.h"
#include "passes/quant_rules.h"
#include "passes/sparsify.h"

namespace slimpack::cli {

struct StageOptions {
  // Pass names; unset: the default pipeline for the input kind.
  std::optional<std::vector<std::string>> passes;
  bool verify_each = false;
  bool print_ir_after_all = false;
  std::vector<std::string> print_ir_after;
  // Structured pruning (ratio 0: off); runs first, before passes and
  // quantization. Its calib_paths/threads are taken from `calib`/`threads`.
  prune::PruneOptions prune;
  // Weight sparsity (active when `sparsify` is set); runs after pruning and
  // the graph passes, before quantization. calib_paths/threads come from
  // `calib`/`threads`.
  std::optional<sparsify::SparsifyOptions> sparsify;
  quantize::QuantConfig quant;
  std::vector<std::string> calib;  // calibration files / directories
  int threads = 1;
  bool verbose = false;
};

struct StageResult {
  nlohmann::json records = nlohmann::json::array();  // producer.passes
  std::vector<std::string> passes_run;               // for the recipe
};

// Errors name the stage ("pass fuse-gelu", "quantize") and pass through
// the stage's own message.
absl::StatusOr<StageResult> RunConvertStages(ir::Model& model, const StageOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_CONVERT_STAGES_H_
