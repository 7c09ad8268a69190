// RunPipeline (see pipeline.h): the PassManager driven from a request, with
// JSON records for the manifest and human lines for `convert -v`.
#include "passes/pipeline.h"

#include <cstdio>
#include <set>

#include "passes/pass_manager.h"
#include "passes/registry.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

// Near-miss lines shown per pass; a cleanup pass can log one line per node.
constexpr size_t kMaxLogLinesPerPass = 20;

std::string FormatBytes(int64_t bytes) {
  char buf[64];
  if (bytes >= (int64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / 1048576.0);
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", bytes / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

// Defaults of the pass's options overlaid with the values the spec sets.
nlohmann::json EffectiveOptions(const PassSpec& spec) {
  nlohmann::json options = nlohmann::json::object();
  if (std::optional<PassInfo> info = FindPass(spec.name)) {
    for (const PassOptionInfo& o : info->options) options[o.name] = o.default_value;
  }
  for (const auto& [key, value] : spec.values) options[key] = value;
  return options;
}

nlohmann::json RecordJson(const PassRecord& record, const PassSpec& spec) {
  return {{"name", record.name},
          {"options", EffectiveOptions(spec)},
          {"stats",
           {{"bytes_saved", record.stats.bytes_saved},
            {"matched", record.stats.nodes_matched},
            {"nodes_after", record.nodes_after},
            {"nodes_before", record.nodes_before},
            {"removed", record.stats.nodes_removed},
            {"rewritten", record.stats.nodes_rewritten}}}};
}

void AddVerboseLines(const PassRecord& record, std::vector<std::string>& lines) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "pass %s: %.3f s, nodes %lld -> %lld",
                record.name.c_str(), record.wall_seconds,
                static_cast<long long>(record.nodes_before),
                static_cast<long long>(record.nodes_after));
  std::string line = buf;
  const PassStatistics& s = record.stats;
  line += ", matched " + std::to_string(s.nodes_matched) + ", rewritten " +
          std::to_string(s.nodes_rewritten) + ", removed " +
          std::to_string(s.nodes_removed) + ", bytes saved " +
          FormatBytes(s.bytes_saved);
  lines.push_back(std::move(line));
  for (size_t i = 0; i < record.log.size() && i < kMaxLogLinesPerPass; ++i) {
    lines.push_back("  " + record.log[i]);
  }
  if (record.log.size() > kMaxLogLinesPerPass) {
    lines.push_back("  ... " + std::to_string(record.log.size() - kMaxLogLinesPerPass) +
                    " more");
  }
}

}  // namespace

std::vector<std::string> FlattenPassSpecs(const std::vector<std::string>& names) {
  std::vector<std::string> specs;
  for (const std::string& name : names) {
    for (std::string& spec : SplitPipeline(name)) specs.push_back(std::move(spec));
  }
  return specs;
}

absl::Status ValidatePassNames(const std::vector<std::string>& names) {
  for (const std::string& spec : FlattenPassSpecs(names)) {
    RETURN_IF_ERROR(ParsePassSpec(spec).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<PipelineResult> RunPipeline(ir::Model& model,
                                           const PipelineRequest& req) {
  std::vector<std::string> specs = FlattenPassSpecs(req.passes);
  if (specs.empty() && req.use_default) specs = DefaultPipeline(model.source_format);
  std::vector<PassSpec> parsed;
  for (const std::string& spec : specs) {
    ASSIGN_OR_RETURN(PassSpec p, ParsePassSpec(spec));
    parsed.push_back(std::move(p));
  }
  PipelineResult result;
  result.nodes_before = static_cast<int64_t>(model.graph.nodes.size());
  result.nodes_after = result.nodes_before;
  if (specs.empty()) {
    result.verbose_lines.push_back("passes: none requested");
    return result;
  }
  if (model.graph.nodes.empty()) {
    // HF checkpoints carry weights only; their compute graph is built at
    // run time (hf/), so there is nothing to rewrite here.
    result.verbose_lines.push_back(
        "passes: skipped, the model has no graph nodes (weights only)");
    return result;
  }
  auto opset_it = model.opset_imports.find("");
  int64_t opset = opset_it == model.opset_imports.end() ? 17 : opset_it->second;

  PassManagerOptions options;
  options.verify_each = req.verify_each;
  options.print_ir_after_all = req.print_ir_after_all;
  options.print_ir_after =
      std::set<std::string>(req.print_ir_after.begin(), req.print_ir_after.end());
  options.ir_stream = req.ir_out;
  options.opset = opset;
  PassManager manager(options);
  RETURN_IF_ERROR(manager.AddPasses(specs));
  ASSIGN_OR_RETURN(PassManagerResult run, manager.Run(model.graph));

  for (size_t i = 0; i < run.passes.size(); ++i) {
    result.records.push_back(RecordJson(run.passes[i], parsed[i]));
    AddVerboseLines(run.passes[i], result.verbose_lines);
  }
  result.nodes_after = static_cast<int64_t>(model.graph.nodes.size());
  if (run.required_opset > opset) {
    model.opset_imports[""] = run.required_opset;
    result.verbose_lines.push_back("opset raised " + std::to_string(opset) + " -> " +
                                   std::to_string(run.required_opset) +
                                   " for the ops the passes emitted");
  }
  result.verbose_lines.push_back("passes: nodes " + std::to_string(result.nodes_before) +
                                 " -> " + std::to_string(result.nodes_after));
  return result;
}

}  // namespace slimpack::passes
