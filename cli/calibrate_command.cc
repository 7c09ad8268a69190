// `slimpack calibrate`: flags -> dataset + observer options, then
// Calibrate, the atomic table write and the optional coverage check.
#include "cli/calibrate_command.h"

#include <cstdio>
#include <functional>
#include <optional>
#include <unistd.h>

#include "calibration/dataset.h"
#include "calibration/token_ids.h"
#include "eval/runnable_model.h"
#include "calibration/calibrator.h"
#include "cli/exit_codes.h"
#include "cli/progress_printer.h"
#include "converter/awq_input_stats.h"
#include "converter/hessian_stats.h"
#include "converter/imatrix_stats.h"
#include "formats/gguf/imatrix_file.h"
#include "formats/import.h"
#include "quantize/importance_matrix.h"
#include "support/atomic_file.h"
#include "support/format_bytes.h"
#include "support/output_path.h"
#include "support/status_macros.h"

namespace slimpack::cli {
namespace {

using calibration::Dataset;

absl::StatusOr<calibration::DatasetOptions> DatasetOptionsFrom(const CalibrateOptions& o) {
  calibration::DatasetOptions d;
  d.max_batch = o.max_batch;
  for (const std::string& m : o.input_map) {
    const size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size()) {
      return absl::InvalidArgumentError("--input-map '" + m +
                                        "': expected MODEL_INPUT=ARRAY_NAME");
    }
    d.rename[m.substr(0, eq)] = m.substr(eq + 1);
  }
  return d;
}

absl::StatusOr<calibration::ObserverOptions> ObserverOptionsFrom(const CalibrateOptions& o) {
  calibration::ObserverOptions obs;
  ASSIGN_OR_RETURN(obs.method, calibration::RangeMethodFromName(o.method));
  obs.per_channel = o.per_channel;
  obs.channel_axis = o.channel_axis;
  obs.percentile = o.percentile;
  obs.num_bins = o.num_bins;
  obs.entropy_levels = o.entropy_levels;
  return obs;
}

// What `calibrate` writes: replaced without --force only if it is already
// a calibration table (JSON whose "format" is "slimpack-calibration").
support::OutputKind CalibrationTableKind() {
  return {"a slimpack calibration table (JSON with \"format\": \"slimpack-calibration\")",
          [](const std::string& path) {
            return support::JsonFileHasFormat(path, "slimpack-calibration");
          }};
}

// Every file calibrate reads: the model's files and the data paths.
std::vector<std::string> CalibrateInputs(const CalibrateOptions& o, const ir::Model& model) {
  std::vector<std::string> inputs = {o.model, model.source_path};
  inputs.insert(inputs.end(), model.input_files.begin(), model.input_files.end());
  inputs.insert(inputs.end(), model.carried_files.begin(), model.carried_files.end());
  inputs.insert(inputs.end(), o.data.begin(), o.data.end());
  inputs.insert(inputs.end(), o.check_data.begin(), o.check_data.end());
  return inputs;
}

// The context of the range table's calibration events, whose runs -v
// prints as "run N" lines of their own.
constexpr char kRangesContext[] = "ranges";

// Where a run reports: progress events (null when nothing draws them) and
// the -v lines, which first clear a live progress line.
struct Output {
  support::ProgressSink progress;
  std::function<void(const std::string&)> log;  // null without -v
  std::function<void()> clear;                  // before the summary on stdout
};

absl::Status Run(const CalibrateOptions& o, const Output& out) {
  ASSIGN_OR_RETURN(calibration::ObserverOptions obs, ObserverOptionsFrom(o));
  ASSIGN_OR_RETURN(calibration::DatasetOptions dopts, DatasetOptionsFrom(o));
  // Output rules (support/output_path.h) before any work: a writable
  // directory, and an existing file replaced only if it is a calibration
  // table or with --force.
  RETURN_IF_ERROR(support::PreflightOutputFile(o.output, o.force, CalibrationTableKind()).status());
  // A runnable model: an HF checkpoint gets its decoder graph (input_ids ->
  // logits), so token-id files calibrate an LM as they do `eval`.
  ASSIGN_OR_RETURN(ir::Model model, eval::LoadRunnableModel(o.model));
  // Never one of the inputs (device and inode, so links are caught), even
  // with --force.
  const std::vector<std::string> files_read = CalibrateInputs(o, model);
  RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(files_read, o.output, "-o"));
  dopts.vocab_size = calibration::KnownVocabSize(model);  // token ids are checked against it
  dopts.max_positions = calibration::KnownMaxPositions(model);
  const std::vector<ir::ValueInfo> inputs = calibration::FeedInputs(model.graph);
  for (const auto& [name, array] : dopts.rename) {
    bool known = false;
    for (const auto& in : inputs) known |= in.name == name;
    if (!known) {
      return absl::InvalidArgumentError("--input-map: model has no input '" + name + "'");
    }
  }
  std::optional<Dataset> data;
  if (o.random_samples > 0) {
    std::fprintf(stderr,
                 "slimpack calibrate: warning: --calib-random uses synthetic inputs; the "
                 "ranges are for smoke tests only, this is not calibration\n");
    ASSIGN_OR_RETURN(data, Dataset::Random(o.random_samples, o.seed, inputs));
  } else {
    ASSIGN_OR_RETURN(data, Dataset::Open(o.data, inputs, dopts));
  }
  calibration::CalibrateOptions copts;
  copts.observer = obs;
  copts.collect_xtx = o.xtx;
  copts.num_threads = o.threads;
  // The runs go to the end of the data: their number is not known ahead.
  if (out.progress) out.progress({"calibration", 0, 0, "runs", kRangesContext});
  copts.progress = [&out](int64_t runs) {
    if (out.log) out.log("run " + std::to_string(runs));
    if (out.progress) out.progress({"calibration", runs, 0, "runs", kRangesContext});
  };
  copts.note = out.log;
  ASSIGN_OR_RETURN(calibration::CalibrationTable table,
                   calibration::Calibrate(model, *data, copts));
  // Now the total is known: the stage's end.
  if (out.progress) out.progress({"calibration", table.runs, table.runs, "runs", kRangesContext});
  ASSIGN_OR_RETURN(table.model_sha256, calibration::ModelDigest(model));
  // Again before writing (atomically): the path may have changed meanwhile.
  RETURN_IF_ERROR(support::PreflightOutputFile(o.output, o.force, CalibrationTableKind()).status());
  RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(files_read, o.output, "-o"));
  RETURN_IF_ERROR(calibration::WriteCalibrationTable(table, o.output));
  out.clear();
  std::printf("calibrated %zu tensors, %zu linear layers with %s%s over %lld samples "
              "(%lld runs) -> %s\n",
              table.tensors.size(), table.linears.size(), o.method.c_str(),
              o.per_channel ? " (per-channel)" : "", static_cast<long long>(table.samples),
              static_cast<long long>(table.runs), o.output.c_str());
  if (o.check_data.empty()) return absl::OkStatus();

  ASSIGN_OR_RETURN(Dataset check, Dataset::Open(o.check_data, inputs, dopts));
  ASSIGN_OR_RETURN(auto issues, calibration::CheckCoverage(model, table, check, o.threads));
  std::printf("coverage on %zu check file(s): %zu tensor(s) exceed their calibrated range\n",
              check.files().size(), issues.size());
  for (const auto& c : issues) {
    std::printf("  %s: calibrated [%g, %g], observed [%g, %g], %.4g%% outside\n",
                c.tensor.c_str(), c.calibrated_lo, c.calibrated_hi, c.observed_min,
                c.observed_max, 100 * c.fraction_outside);
  }
  return absl::OkStatus();
}

// What `calibrate --imatrix` writes: replaced without --force only if it is
// already an importance matrix.
support::OutputKind ImatrixKind() {
  return {"an importance matrix (llama.cpp's imatrix .dat layout)",
          [](const std::string& path) { return gguf::ReadImatrixFile(path).ok(); }};
}

// The data files' base names, comma-separated: the "dataset" a statistics
// file records.
std::string DatasetName(const std::vector<std::string>& data) {
  std::string out;
  for (const std::string& d : data) out += (out.empty() ? "" : ",") + d.substr(d.rfind('/') + 1);
  return out;
}

// --imatrix: the mean x^2 of every linear layer's input columns over the
// calibration windows, as `convert --algo imatrix --calib` computes it, in
// a file `convert --imatrix` (and llama-quantize) reads.
absl::Status RunImatrix(const CalibrateOptions& o, const Output& out) {
  if (o.random_samples > 0 || !o.check_data.empty()) {
    return absl::InvalidArgumentError(
        "--imatrix: statistics of real calibration data only (no --calib-random, "
        "--check-data)");
  }
  RETURN_IF_ERROR(support::PreflightOutputFile(o.output, o.force, ImatrixKind()).status());
  ASSIGN_OR_RETURN(ir::Model model, formats::ImportModel(o.model));
  const std::vector<std::string> files_read = CalibrateInputs(o, model);
  RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(files_read, o.output, "-o"));
  ASSIGN_OR_RETURN(quantize::ImportanceMatrix m,
                   quantize::ComputeImportanceMatrix(model, o.data, o.calib_samples, o.threads,
                                                     out.progress));
  const std::string dataset = DatasetName(o.data);
  ASSIGN_OR_RETURN(gguf::ImatrixFile file, converter::ImatrixOf(model, m, dataset));
  const std::string bytes = gguf::SerializeImatrix(file);
  RETURN_IF_ERROR(support::PreflightOutputFile(o.output, o.force, ImatrixKind()).status());
  RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(files_read, o.output, "-o"));
  RETURN_IF_ERROR(WriteFileAtomically(o.output, {bytes}));
  out.clear();
  std::printf("imatrix of %zu linear layers over %lld samples -> %s\n", file.entries.size(),
              static_cast<long long>(m.samples), o.output.c_str());
  return absl::OkStatus();
}

// What `calibrate --hessians` writes: replaced without --force only if it is
// already a Hessian file.
support::OutputKind HessianKind() {
  return {"a Hessian file (slimpack-hessians safetensors)", converter::IsHessianStats};
}

// --hessians: X^T X / rows of every linear layer's input in the float model,
// for `convert --algo gptq --hessians` (converter/hessian_stats.h).
absl::Status RunHessians(const CalibrateOptions& o, const Output& out) {
  if (o.random_samples > 0 || !o.check_data.empty() || o.imatrix || o.awq_inputs) {
    return absl::InvalidArgumentError(
        "--hessians: statistics of real calibration data only, in a file of their own (no "
        "--calib-random, --check-data, --imatrix, --awq-inputs)");
  }
  RETURN_IF_ERROR(support::PreflightOutputFile(o.output, o.force, HessianKind()).status());
  ASSIGN_OR_RETURN(ir::Model model, formats::ImportModel(o.model));
  const std::vector<std::string> files_read = CalibrateInputs(o, model);
  RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(files_read, o.output, "-o"));
  quantize::FloatHessianOptions ho;
  ho.max_runs = o.calib_samples;
  ho.threads = o.threads;
  ho.progress = out.progress;
  ho.log = out.log;
  const std::string dataset = DatasetName(o.data);
  ASSIGN_OR_RETURN(converter::HessianStatsSummary done,
                   converter::WriteHessianStats(model, o.data, ho, dataset, o.output));
  out.clear();
  std::printf("Hessians of %zu linear layers over %lld samples (%s) -> %s\n", done.entries,
              static_cast<long long>(done.samples), support::FormatBytes(done.bytes).c_str(),
              o.output.c_str());
  return absl::OkStatus();
}

// What `calibrate --awq-inputs` writes: replaced without --force only if
// it is already an AWQ input file.
support::OutputKind AwqInputsKind() {
  return {"an AWQ input file (slimpack-awq-inputs safetensors)", converter::IsAwqInputStats};
}

// --awq-inputs: every AWQ group's input in the float model, for `convert
// --algo awq --awq-inputs` (converter/awq_input_stats.h).
absl::Status RunAwqInputs(const CalibrateOptions& o, const Output& out) {
  if (o.random_samples > 0 || !o.check_data.empty() || o.imatrix) {
    return absl::InvalidArgumentError(
        "--awq-inputs: inputs of real calibration data only, in a file of their own (no "
        "--calib-random, --check-data, --imatrix, --hessians)");
  }
  RETURN_IF_ERROR(support::PreflightOutputFile(o.output, o.force, AwqInputsKind()).status());
  ASSIGN_OR_RETURN(ir::Model model, formats::ImportModel(o.model));
  const std::vector<std::string> files_read = CalibrateInputs(o, model);
  RETURN_IF_ERROR(support::CheckOutputIsNotAnInput(files_read, o.output, "-o"));
  quantize::AwqFoldOptions ao;
  ao.max_runs = o.calib_samples;
  ao.threads = o.threads;
  ao.progress = out.progress;
  const std::string dataset = DatasetName(o.data);
  ASSIGN_OR_RETURN(converter::AwqInputStatsSummary done,
                   converter::WriteAwqInputStats(model, o.data, ao, dataset, o.output));
  out.clear();
  std::printf("AWQ inputs of %zu layer groups over %lld samples (%s) -> %s\n", done.inputs,
              static_cast<long long>(done.samples), support::FormatBytes(done.bytes).c_str(),
              o.output.c_str());
  return absl::OkStatus();
}

}  // namespace

int RunCalibrate(const CalibrateOptions& options) {
  if (options.output.empty() || options.data.empty() == (options.random_samples == 0)) {
    std::fprintf(stderr, "slimpack calibrate: give -o/--output and exactly one of --data "
                         "and --calib-random\n");
    return kExitUsage;
  }
  ProgressPrinter printer(ParseProgressMode(options.progress), ::isatty(STDERR_FILENO) == 1);
  Output out;
  out.progress = printer.Sink();
  out.clear = [&printer] { printer.ClearLine(); };
  if (options.verbose) {
    out.log = printer.LineSink();
    // -v with nothing drawn (no terminal, or --progress none): a line per
    // step, as convert prints one per file written. The range table's runs
    // have their own "run N" lines.
    if (!out.progress) {
      out.progress = [](const support::ProgressEvent& e) {
        if (e.context == kRangesContext) return;
        std::fprintf(stderr, "%s\n", ProgressText(e, 0).c_str());
      };
    }
  }
  absl::Status s = options.hessians     ? RunHessians(options, out)
                   : options.awq_inputs ? RunAwqInputs(options, out)
                   : options.imatrix ? RunImatrix(options, out)
                                     : Run(options, out);
  printer.ClearLine();
  if (!s.ok()) {
    std::fprintf(stderr, "slimpack calibrate: %s\n", s.ToString().c_str());
    return kExitInputError;
  }
  return kExitOk;
}

}  // namespace slimpack::cli
