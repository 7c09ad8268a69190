// The report subcommand: parse the gate first (a typo fails before any
// model runs), load both models and the data, build, write, gate.
#include "absl/strings/match.h"
#include "cli/report_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "eval/runnable_model.h"
#include "calibration/calibration_table.h"
#include "calibration/token_ids.h"
#include "report/gate.h"
#include "report/render.h"
#include "report/report.h"
#include "cli/exit_codes.h"
#include "cli/progress_printer.h"
#include "formats/gguf/gguf_requantized.h"
#include "formats/gguf/llama_names.h"
#include "formats/numpy/numpy_io.h"
#include "formats/safetensors/safetensors_reader.h"
#include "runtime/kernels/fused_kernels.h"
#include "support/output_path.h"
#include "support/status_macros.h"

namespace slimpack::cli {
namespace {

int Fail(const absl::Status& s, int code = kExitInputError) {
  std::fprintf(stderr, "slimpack report: %s\n", std::string(s.message()).c_str());
  return code;
}

// Labels (integer class ids) from the array `name` of each data file, in
// file order. Returns an empty vector when `required` is false and a file
// lacks the array.
absl::StatusOr<std::vector<int64_t>> ReadLabels(const std::vector<std::string>& files,
                                                const std::string& name, bool required) {
  std::vector<int64_t> labels;
  for (const std::string& f : files) {
    struct stat st;
    if (stat(f.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      if (!required) return std::vector<int64_t>();
      return absl::InvalidArgumentError("--labels reads data files, not directories: " + f);
    }
    std::vector<ir::Tensor> tensors;
    if (absl::EndsWith(f, ".safetensors")) {
      ASSIGN_OR_RETURN(auto st_file, safetensors::ReadSafetensorsFile(f));
      tensors = std::move(st_file.tensors);
    } else if (absl::EndsWith(f, ".npz")) {
      ASSIGN_OR_RETURN(tensors, numpy::ReadNpz(f));
    } else {
      if (!required) return std::vector<int64_t>();
      return absl::InvalidArgumentError(
          "--labels: " + f + " holds one array (.npy); labels need .npz or .safetensors");
    }
    const ir::Tensor* t = nullptr;
    for (const ir::Tensor& x : tensors) {
      if (x.name == name) t = &x;
    }
    if (t == nullptr) {
      if (!required) return std::vector<int64_t>();
      return absl::InvalidArgumentError(f + ": no array '" + name + "' (--labels)");
    }
    if (t->dtype != ir::DType::kI64 && t->dtype != ir::DType::kI32) {
      return absl::InvalidArgumentError(f + ": labels '" + name + "' are " +
                                        std::string(ir::DTypeName(t->dtype)) +
                                        ", expected int64 or int32 class ids");
    }
    ASSIGN_OR_RETURN(uint64_t n, t->NumElements());
    if (t->data.size() != n * (t->dtype == ir::DType::kI64 ? 8 : 4)) {
      return absl::InvalidArgumentError(f + ": labels '" + name + "' size mismatch");
    }
    for (uint64_t i = 0; i < n; ++i) {
      if (t->dtype == ir::DType::kI64) {
        int64_t v;
        std::memcpy(&v, t->data.data() + 8 * i, 8);
        labels.push_back(v);
      } else {
        int32_t v;
        std::memcpy(&v, t->data.data() + 4 * i, 4);
        labels.push_back(v);
      }
    }
  }
  return labels;
}

// `reference`'s vocabulary and context (0 = unknown) bound the token ids.
absl::StatusOr<calibration::DatasetOptions> DatasetOptionsFrom(const ReportCommandOptions& o,
                                                               const ir::Model& reference) {
  const ir::Graph& graph = reference.graph;
  calibration::DatasetOptions d;
  d.max_batch = o.max_batch;
  d.vocab_size = calibration::KnownVocabSize(reference);
  d.max_positions = calibration::KnownMaxPositions(reference);
  const std::vector<ir::ValueInfo> inputs = calibration::FeedInputs(graph);
  for (const std::string& m : o.input_map) {
    const size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size()) {
      return absl::InvalidArgumentError("--input-map '" + m + "': expected MODEL_INPUT=ARRAY_NAME");
    }
    const std::string name = m.substr(0, eq);
    bool known = false;
    for (const auto& in : inputs) known |= in.name == name;
    if (!known) return absl::InvalidArgumentError("--input-map: model has no input '" + name + "'");
    d.rename[name] = m.substr(eq + 1);
  }
  return d;
}

// The output rules of support/output_path.h for a report directory, before
// any work and again just before writing: the directory is created if
// absent (its parent must exist and be writable); in an existing one,
// report.json, report.md and report.html are replaced only if its
// report.json is a slimpack report (or with --force), and nothing else in
// it is touched.
absl::Status PreflightReportDirectory(const std::string& dir, bool force) {
  if (dir.empty()) return absl::InvalidArgumentError("-o: name the report directory");
  RETURN_IF_ERROR(support::CheckParentWritable(dir));
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();  // created when writing
    return absl::InvalidArgumentError(dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        dir + ": exists and is not a directory; -o names the report directory");
  }
  const std::string normalized = support::NormalizeOutputPath(dir);
  RETURN_IF_ERROR(support::CheckParentWritable(normalized + "/report.json"));
  support::OutputKind kind;
  kind.description =
      "part of a slimpack report (the directory's report.json has \"format\": \"" +
      std::string(report::kReportFormatName) + "\")";
  kind.written_by_us = [&normalized](const std::string&) {
    return report::IsSlimpackReportDirectory(normalized);
  };
  for (const char* name : report::kReportFileNames) {
    RETURN_IF_ERROR(
        support::PreflightOutputFile(normalized + "/" + name, force, kind).status());
  }
  return absl::OkStatus();
}

// Every file the report reads: the flags' paths and the files each model
// was built from.
std::vector<std::string> ReportInputs(const ReportCommandOptions& o,
                                      const std::vector<const ir::Model*>& models) {
  std::vector<std::string> inputs = {o.reference, o.candidate, o.calib};
  inputs.insert(inputs.end(), o.data.begin(), o.data.end());
  for (const ir::Model* m : models) {
    inputs.push_back(m->source_path);
    inputs.insert(inputs.end(), m->input_files.begin(), m->input_files.end());
    inputs.insert(inputs.end(), m->carried_files.begin(), m->carried_files.end());
  }
  return inputs;
}

// Neither the report directory nor any file written into it is an input
// (device and inode: `-o` the candidate artifact or a data directory, or a
// data file named report.json, is refused).
absl::Status CheckReportOutputsAreNotInputs(const std::string& dir,
                                            const std::vector<std::string>& inputs) {
  RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(inputs, dir, "-o"));
  const std::string normalized = support::NormalizeOutputPath(dir);
  for (const char* name : report::kReportFileNames) {
    RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(inputs, normalized + "/" + name, "-o"));
  }
  return absl::OkStatus();
}

}  // namespace

int RunReport(const ReportCommandOptions& o) {
  if (o.threads < 1 || o.max_batch < 1 || o.max_runs < 0 || o.sensitivity_runs < 0 ||
      o.fallback_layers < 0) {
    std::fprintf(stderr,
                 "slimpack report: --threads and --max-batch must be >= 1; --max-runs, "
                 "--sensitivity-runs and --fallback-layers >= 0\n");
    return kExitUsage;
  }
  std::vector<report::GateRule> rules;
  if (!o.gate.empty()) {
    auto r = report::ParseGateRules(o.gate);
    if (!r.ok()) return Fail(r.status(), kExitUsage);
    rules = *std::move(r);
  }
  // The output first: a report that cannot be written is refused before
  // any model runs.
  if (absl::Status s = PreflightReportDirectory(o.output, o.force); !s.ok()) return Fail(s);
  auto reference = eval::LoadRunnableModel(o.reference);
  if (!reference.ok()) return Fail(reference.status());
  auto candidate = eval::LoadRunnableModel(o.candidate);
  if (!candidate.ok()) return Fail(candidate.status());
  const std::vector<std::string> inputs = ReportInputs(o, {&*reference, &*candidate});
  if (absl::Status s = CheckReportOutputsAreNotInputs(o.output, inputs); !s.ok()) return Fail(s);
  auto dopts = DatasetOptionsFrom(o, *reference);
  if (!dopts.ok()) return Fail(dopts.status(), kExitUsage);
  auto data = calibration::Dataset::Open(o.data, calibration::FeedInputs(reference->graph), *dopts);
  if (!data.ok()) return Fail(data.status());

  report::ReportOptions ropts;
  ropts.num_threads = o.threads;
  // Candidates converted with passes carry fused ops (slimpack domain).
  ropts.max_runs = o.max_runs;
  ropts.sensitivity_runs = o.sensitivity_runs;
  ropts.max_fallback_layers = o.fallback_layers;
  auto labels = ReadLabels(o.data, o.labels.empty() ? "labels" : o.labels, !o.labels.empty());
  if (!labels.ok()) return Fail(labels.status());
  ropts.labels = *std::move(labels);
  std::optional<calibration::CalibrationTable> calib;
  if (!o.calib.empty()) {
    auto t = calibration::LoadCalibrationTable(o.calib);
    if (!t.ok()) return Fail(t.status());
    calib = *std::move(t);
    ropts.calibration = &*calib;
    const size_t slash = o.calib.find_last_of('/');
    ropts.calibration_name = slash == std::string::npos ? o.calib : o.calib.substr(slash + 1);
  }
  // A live line on a terminal only (CI logs get the summary), or JSON lines.
  ProgressPrinter progress(ParseProgressMode(o.progress), isatty(STDERR_FILENO) == 1);
  ropts.progress = progress.Sink();
  auto rep = report::BuildReport(*reference, *candidate, *data, ropts);
  progress.ClearLine();
  if (!rep.ok()) return Fail(rep.status());
  // A pruned candidate artifact: per-layer kept ratios from its prune record.
  auto pruning = report::ReadCandidatePruning(o.candidate);
  if (!pruning.ok()) return Fail(pruning.status());
  rep->pruning = *std::move(pruning);
  // A GGUF candidate slimpack wrote from an already-quantized source
  // records which weights it encoded again and the error that added.
  if (candidate->source_format == ir::SourceFormat::kGguf) {
    auto file = gguf::OpenGgufFile(o.candidate);
    if (!file.ok()) return Fail(file.status());
    auto records = gguf::ReadRequantizedTensors(*file);
    if (!records.ok()) return Fail(records.status());
    for (const gguf::RequantizedTensor& t : *records) {
      const std::string hf = gguf::HfNameFromGguf(t.name);
      for (report::WeightReport& w : rep->weights) {
        if (w.name == hf) w.recorded_rel_l2 = t.rel_l2;
      }
    }
  }
  if (!rules.empty()) {
    auto g = report::EvaluateGate(rules, *rep);
    if (!g.ok()) return Fail(g.status());
    rep->gate = *std::move(g);
  }
  // Again, now that the work is done: the directory may have changed.
  if (absl::Status s = PreflightReportDirectory(o.output, o.force); !s.ok()) return Fail(s);
  if (absl::Status s = CheckReportOutputsAreNotInputs(o.output, inputs); !s.ok()) return Fail(s);
  if (absl::Status s = report::WriteReportFiles(*rep, o.output); !s.ok()) return Fail(s);
  if (o.json) {
    std::printf("%s\n", report::ReportToJson(*rep)
                            .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                            .c_str());
  } else {
    std::printf("%s\nwrote %s/report.json, report.md, report.html\n",
                report::RenderMarkdown(*rep).c_str(), o.output.c_str());
  }
  if (!rep->gate_passed()) {
    for (const report::GateRuleResult& g : rep->gate) {
      if (!g.passed) std::fprintf(stderr, "slimpack report: gate %s\n", g.message.c_str());
    }
    return kExitGateFailed;
  }
  return kExitOk;
}

}  // namespace slimpack::cli
