// The pass pipeline as `slimpack convert` runs it: pass names from the
// recipe / --passes (or the default pipeline for the input kind), IR
// printing and verification options, the model's opset raised to what the
// emitted ops need, and per-pass records for the manifest and for `-v`.
#ifndef SLIMPACK_PASSES_PIPELINE_H_
#define SLIMPACK_PASSES_PIPELINE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "nlohmann/json.hpp"

namespace slimpack::passes {

struct PipelineRequest {
  // Pass specs ("name" or "name{k=v}"); an element may itself be a
  // comma-separated pipeline ("a,b{k=v}"). Empty and use_default: the
  // DefaultPipeline for the model's source format. Empty and !use_default:
  // no passes.
  std::vector<std::string> passes;
  bool use_default = true;
  bool verify_each = false;
  bool print_ir_after_all = false;
  std::vector<std::string> print_ir_after;  // pass names
  std::ostream* ir_out = nullptr;           // where printed IR goes
};

struct PipelineResult {
  // One object per pass run, in order:
  //   {"name": "...", "options": {"key": "value", ...},
  //    "stats": {"bytes_saved", "matched", "nodes_after", "nodes_before",
  //              "removed", "rewritten"}}
  // Options are the effective values (defaults overlaid with the spec's).
  // No timings, so the manifest is byte-identical across runs.
  nlohmann::json records = nlohmann::json::array();
  // Human lines for `convert -v`: per pass time, node counts, statistics,
  // near-miss reasons; the opset change if any.
  std::vector<std::string> verbose_lines;
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
};

// The specs of `names` after flattening comma-separated elements.
std::vector<std::string> FlattenPassSpecs(const std::vector<std::string>& names);

// OK when every spec names a registered pass with known option keys;
// otherwise InvalidArgument naming the unknown pass (or option) and listing
// the known ones.
absl::Status ValidatePassNames(const std::vector<std::string>& names);

// Runs the requested pipeline over model.graph. Raises
// model.opset_imports[""] to the highest opset an emitted op needs. A model
// without graph nodes (a safetensors checkpoint) is left untouched and the
// verbose lines say so. Errors: InvalidArgument for unknown passes or a
// print_ir_after name not in the pipeline (or printing without ir_out);
// a pass's own error prefixed with "pass '<name>'"; Internal naming the
// pass after which the graph failed verification (verify_each).
absl::StatusOr<PipelineResult> RunPipeline(ir::Model& model,
                                           const PipelineRequest& req);

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_PIPELINE_H_
