// Runs an ordered list of passes over a graph, with optional IR printing
// and verification after each pass, and records per-pass timing and
// statistics for the manifest's producer section.
#ifndef SLIMPACK_PASSES_PASS_MANAGER_H_
#define SLIMPACK_PASSES_PASS_MANAGER_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/kernel_registry.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace slimpack::passes {

struct PassManagerOptions {
  // Runs ir::VerifyGraph after every pass (and once before the first).
  bool verify_each = false;
  // Prints the IR (ir::PrintGraph) after every pass, or after the named
  // passes, to `ir_stream`.
  bool print_ir_after_all = false;
  std::set<std::string> print_ir_after;
  std::ostream* ir_stream = nullptr;
  // Model's default-domain opset (PassContext::opset).
  int64_t opset = 17;
  // Kernels for fold-constants; null means built-ins plus fused kernels.
  std::shared_ptr<const runtime::KernelRegistry> kernels;
};

// What one pass did; data for the manifest.
struct PassRecord {
  std::string name;
  double wall_seconds = 0;
  bool changed = false;
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  PassStatistics stats;
  std::vector<std::string> log;  // near misses and notes
};

struct PassManagerResult {
  std::vector<PassRecord> passes;
  // Highest default-domain opset an emitted op needs (0: none). The caller
  // raises Model::opset_imports[""] to at least this.
  int64_t required_opset = 0;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {});

  void AddPass(std::unique_ptr<Pass> pass);
  // Adds passes by spec (registry.h CreatePass); stops at the first error.
  absl::Status AddPasses(const std::vector<std::string>& specs);
  std::vector<std::string> pass_names() const;

  // Runs every pass in order on `graph`. Errors:
  //  - InvalidArgument if print_ir_after names a pass not in the pipeline,
  //    or printing is requested with no ir_stream;
  //  - a pass's own error, prefixed with "pass '<name>'";
  //  - with verify_each, InvalidArgument if the input graph is invalid and
  //    Internal naming the pass after which the graph became invalid.
  absl::StatusOr<PassManagerResult> Run(ir::Graph& graph) const;

 private:
  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_PASS_MANAGER_H_
