// PassManager (see pass_manager.h).
#include "passes/pass_manager.h"

#include <algorithm>
#include <chrono>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/registry.h"
#include "support/status_macros.h"

namespace slimpack::passes {

PassManager::PassManager(PassManagerOptions options)
    : options_(std::move(options)) {}

void PassManager::AddPass(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
}

absl::Status PassManager::AddPasses(const std::vector<std::string>& specs) {
  for (const std::string& spec : specs) {
    ASSIGN_OR_RETURN(std::unique_ptr<Pass> pass, CreatePass(spec));
    AddPass(std::move(pass));
  }
  return absl::OkStatus();
}

std::vector<std::string> PassManager::pass_names() const {
  std::vector<std::string> names;
  for (const auto& p : passes_) names.emplace_back(p->name());
  return names;
}

absl::StatusOr<PassManagerResult> PassManager::Run(ir::Graph& graph) const {
  std::vector<std::string> names = pass_names();
  for (const std::string& want : options_.print_ir_after) {
    if (std::find(names.begin(), names.end(), want) == names.end()) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      return absl::InvalidArgumentError("print-ir-after: pass '" + want +
                                        "' is not in the pipeline; pipeline: " + list);
    }
  }
  bool printing = options_.print_ir_after_all || !options_.print_ir_after.empty();
  if (printing && options_.ir_stream == nullptr) {
    return absl::InvalidArgumentError("IR printing requested without an output stream");
  }
  if (options_.verify_each) {
    RETURN_IF_ERROR(Annotate(ir::VerifyGraph(graph), "verify-each: input graph"));
  }
  PassManagerResult result;
  for (const auto& pass : passes_) {
    PassContext context(options_.opset, options_.kernels);
    PassRecord record;
    record.name = std::string(pass->name());
    record.nodes_before = static_cast<int64_t>(graph.nodes.size());
    auto start = std::chrono::steady_clock::now();
    absl::Status status = pass->Run(graph, context);
    record.wall_seconds = std::chrono::duration<double>(
        std::chrono::steady_clock::now() - start).count();
    if (!status.ok()) return Annotate(status, "pass '" + record.name + "'");
    if (options_.verify_each) {
      absl::Status verified = ir::VerifyGraph(graph);
      if (!verified.ok()) {
        return absl::InternalError("verify-each: graph is invalid after pass '" +
                                   record.name + "': " + std::string(verified.message()));
      }
    }
    if (options_.print_ir_after_all || options_.print_ir_after.count(record.name)) {
      *options_.ir_stream << "// -----// IR after " << record.name << " //----- //\n"
                          << ir::PrintGraph(graph);
    }
    record.nodes_after = static_cast<int64_t>(graph.nodes.size());
    record.changed = context.changed();
    record.stats = context.stats();
    record.log = context.log();
    result.required_opset = std::max(result.required_opset, context.required_opset());
    result.passes.push_back(std::move(record));
  }
  return result;
}

}  // namespace slimpack::passes
