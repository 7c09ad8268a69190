// The pass interface: a stateless rewrite of an ir::Graph that reports what
// it did (statistics, near-miss log, changed flag) through a PassContext.
#ifndef SLIMPACK_PASSES_PASS_H_
#define SLIMPACK_PASSES_PASS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "runtime/kernel_registry.h"
#include "ir/graph.h"

namespace slimpack::passes {

// Counters one pass run fills in; the pass manager copies them into the
// manifest's producer section.
struct PassStatistics {
  int64_t nodes_matched = 0;    // pattern roots that matched
  int64_t nodes_rewritten = 0;  // nodes created or modified
  int64_t nodes_removed = 0;    // nodes deleted
  // Bytes of intermediate tensors that no longer exist at run time (known
  // only where shapes are static; 0 otherwise) plus initializer bytes
  // removed.
  int64_t bytes_saved = 0;
};

// Per-run scratch handed to Pass::Run. Passes never keep state across runs;
// everything they learn goes here.
class PassContext {
 public:
  // `opset` is the model's default-domain opset; `kernels` are used by
  // fold-constants (null: BuiltinKernels() plus our fused kernels).
  explicit PassContext(int64_t opset = 17,
                       std::shared_ptr<const runtime::KernelRegistry>
                           kernels = nullptr);

  int64_t opset() const { return opset_; }
  // The registry to run constant nodes with (never null).
  const std::shared_ptr<const runtime::KernelRegistry>& kernels() const {
    return kernels_;
  }

  // A pass emitted a default-domain op that needs at least `opset`
  // (e.g. LayerNormalization needs 17). The caller raises the model's
  // opset import to required_opset() after the pipeline.
  void RequireOpset(int64_t opset);
  int64_t required_opset() const { return required_opset_; }

  // Why a candidate did not match, or what was rewritten: shown by
  // --print-ir-after and kept in the pass record.
  void Log(std::string message) { log_.push_back(std::move(message)); }
  const std::vector<std::string>& log() const { return log_; }

  PassStatistics& stats() { return stats_; }
  const PassStatistics& stats() const { return stats_; }
  void MarkChanged() { changed_ = true; }
  bool changed() const { return changed_; }

 private:
  int64_t opset_;
  int64_t required_opset_ = 0;
  std::shared_ptr<const runtime::KernelRegistry> kernels_;
  std::vector<std::string> log_;
  PassStatistics stats_;
  bool changed_ = false;
};

class Pass {
 public:
  virtual ~Pass() = default;
  // The registry name, e.g. "fuse-bn-into-conv".
  virtual std::string_view name() const = 0;
  // Rewrites `graph` in place. Finding nothing to rewrite is success. Errors
  // name the node; a pass never leaves a half-rewritten pattern behind (it
  // checks every condition before the first mutation).
  virtual absl::Status Run(ir::Graph& graph, PassContext& context) const = 0;
};

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_PASS_H_
