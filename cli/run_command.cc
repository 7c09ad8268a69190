// The run subcommand: load, match inputs to the graph, run, save outputs.
#include "cli/run_command.h"

#include <cstdio>

#include "calibration/token_ids.h"
#include "eval/named_tensors.h"
#include "eval/runnable_model.h"
#include "runtime/interpreter.h"
#include "cli/exit_codes.h"
#include "runtime/kernels/fused_kernels.h"
#include "passes/use_packed_weights.h"
#include "formats/numpy/numpy_io.h"
#include "support/output_path.h"

namespace slimpack::cli {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "slimpack run: %s\n", std::string(s.message()).c_str());
  return kExitInputError;
}

// What `run` writes: replaced without --force only if it is an .npz we
// wrote (WriteNpz's archive comment, numpy::IsNpzWrittenBySlimpack).
support::OutputKind NpzOutputKind() {
  return {"an .npz written by slimpack (its zip comment is \"" +
              std::string(numpy::kNpzWriterComment) + "\")",
          numpy::IsNpzWrittenBySlimpack};
}

// Output rules (support/output_path.h), before any work and again before
// writing; `model` adds the files it was read from once it is loaded.
absl::Status CheckOutput(const RunOptions& o, const ir::Model* model) {
  if (absl::Status s = support::PreflightOutputFile(o.output, o.force, NpzOutputKind()).status();
      !s.ok()) {
    return s;
  }
  std::vector<std::string> inputs = {o.model, o.inputs};
  if (model != nullptr) {
    inputs.push_back(model->source_path);
    inputs.insert(inputs.end(), model->input_files.begin(), model->input_files.end());
    inputs.insert(inputs.end(), model->carried_files.begin(), model->carried_files.end());
  }
  return support::CheckOutputIsNotAnInput(inputs, o.output, "-o");
}

}  // namespace

int RunRun(const RunOptions& options) {
  if (options.threads < 1) {
    std::fprintf(stderr, "slimpack run: --threads must be >= 1\n");
    return kExitUsage;
  }
  if (options.output.size() < 4 || options.output.compare(options.output.size() - 4, 4, ".npz") != 0) {
    return Fail(absl::InvalidArgumentError(options.output + ": output must be a .npz file"));
  }
  if (absl::Status s = CheckOutput(options, nullptr); !s.ok()) return Fail(s);
  auto model = eval::LoadRunnableModel(options.model);
  if (!model.ok()) return Fail(model.status());
  if (absl::Status s = CheckOutput(options, &*model); !s.ok()) return Fail(s);
  // Quantized weights stay packed in memory; the packed kernels compute
  // the same bits as the dequantized graph.
  if (auto packed = passes::UsePackedWeights(model->graph); !packed.ok()) {
    return Fail(packed.status());
  }
  auto tensors = numpy::ReadNpyOrNpz(options.inputs);
  if (!tensors.ok()) return Fail(tensors.status());
  auto inputs = eval::MatchGraphInputs(model->graph, *tensors, options.inputs,
                                       calibration::KnownVocabSize(*model),
                                       calibration::KnownMaxPositions(*model));
  if (!inputs.ok()) return Fail(inputs.status());
  runtime::InterpreterOptions iopts;
  // Artifacts hold the graph as the passes left it (slimpack-domain ops).
  iopts.num_threads = options.threads;
  // Only the outputs are wanted: a W8A8 graph's DequantizeLinear ->
  // activation -> QuantizeLinear chains run as byte lookups (same bytes).
  iopts.fuse_quantized_lookups = true;
  auto interp = runtime::Interpreter::Create(*model, iopts);
  if (!interp.ok()) return Fail(interp.status());
  if (options.verbose && interp->f16_widening().changed()) {
    std::fprintf(stderr, "slimpack run: graph '%s' %s\n", model->graph.name.c_str(),
                 interp->f16_widening().Summary().c_str());
  }
  if (options.verbose && interp->quantized_lookups() > 0) {
    std::fprintf(stderr,
                 "slimpack run: %lld DequantizeLinear -> activation -> QuantizeLinear chains "
                 "run as byte lookups\n",
                 static_cast<long long>(interp->quantized_lookups()));
  }
  auto outputs = interp->Run(*inputs);
  if (!outputs.ok()) return Fail(outputs.status());
  std::vector<ir::Tensor> out;
  for (size_t i = 0; i < outputs->size(); ++i) {
    std::string name = interp->output_names()[i];
    while (!name.empty() && name[0] == '/') name.erase(0, 1);
    out.push_back(eval::IrTensorFromRt(name, (*outputs)[i]));
  }
  absl::Status s = CheckOutput(options, &*model);
  if (s.ok()) s = numpy::WriteNpz(options.output, out);  // temp file + rename
  if (!s.ok()) return Fail(s);
  return kExitOk;
}

}  // namespace slimpack::cli
