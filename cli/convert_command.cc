#include "cli/convert_command.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "cli/exit_codes.h"
#include "cli/progress_printer.h"
#include "cli/report_command.h"
#include "converter/convert.h"
#include "converter/convert_gguf.h"
#include "converter/convert_onnx.h"
#include "converter/gguf_recipe.h"
#include "ir/dtype.h"
#include "support/format_bytes.h"
#include "support/progress.h"

namespace slimpack::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The writer's bytes and files: a live line on a terminal (unless
// --progress none); with -v and no terminal, one line per file; with
// --progress json, a "write" event per file.
class WriteProgressPrinter {
 public:
  WriteProgressPrinter(bool verbose, ProgressMode mode, support::ProgressSink sink)
      : tty_(::isatty(STDERR_FILENO) == 1 && mode == ProgressMode::kAuto),
        verbose_(verbose),
        json_(mode == ProgressMode::kJson ? std::move(sink) : nullptr) {}

  bool enabled() const { return tty_ || verbose_ || json_; }

  void Update(const shard_writer::WriteProgress& p) {
    const auto now = Clock::now();
    if (json_) {
      if (!json_started_) json_({"write", 0, p.files_total, "files", ""});
      json_started_ = true;
      if (!p.last_file.empty()) {
        json_({"write", p.files_done, p.files_total, "files", std::string(p.last_file)});
      }
    }
    if (tty_) {
      if (p.last_file.empty() && now - last_ < std::chrono::milliseconds(100)) {
        return;
      }
      last_ = now;
      const int pct = p.bytes_total
                          ? static_cast<int>(100.0 * p.bytes_done / p.bytes_total)
                          : 100;
      std::fprintf(stderr, "\r\033[Kconvert: %s / %s (%d%%), %u/%u files",
                   support::FormatBytes(p.bytes_done).c_str(), support::FormatBytes(p.bytes_total).c_str(),
                   pct, p.files_done, p.files_total);
      std::fflush(stderr);
      drawn_ = true;
    } else if (verbose_ && !p.last_file.empty()) {
      std::fprintf(stderr, "convert: wrote %.*s [%u/%u files, %s of %s]\n",
                   static_cast<int>(p.last_file.size()), p.last_file.data(),
                   p.files_done, p.files_total, support::FormatBytes(p.bytes_done).c_str(),
                   support::FormatBytes(p.bytes_total).c_str());
    }
  }

  void Finish() {
    if (drawn_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  const bool tty_;
  const bool verbose_;
  const support::ProgressSink json_;
  bool json_started_ = false;
  bool drawn_ = false;
  Clock::time_point last_{};
};

// Test-only fault injection for the CLI crash tests:
// SLIMPACK_FAULT_INJECT=<phase> kills the process with SIGKILL when the
// writer reaches that phase; "bytes:<N>" once N bytes are written.
std::function<void(std::string_view, uint64_t)> FaultHookFromEnv() {
  const char* spec = std::getenv("SLIMPACK_FAULT_INJECT");
  if (spec == nullptr || *spec == '\0') return nullptr;
  std::string s = spec;
  if (s.rfind("bytes:", 0) == 0) {
    const uint64_t limit = std::strtoull(s.c_str() + 6, nullptr, 10);
    return [limit](std::string_view phase, uint64_t bytes) {
      if (phase == "bytes" && bytes >= limit) ::raise(SIGKILL);
    };
  }
  return [s](std::string_view phase, uint64_t) {
    if (phase == s) ::raise(SIGKILL);
  };
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "slimpack convert: %s\n", s.ToString().c_str());
  return kExitInputError;
}

// A refused flag value prints as "FLAG: message" and exits 2; anything
// wrong with the input, recipe or output exits 1.
int Refuse(const absl::Status& s) {
  if (converter::IsUsageError(s)) {
    std::fprintf(stderr, "slimpack convert: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  return Fail(s);
}

// `to_artifact`: --quant names a ggml type preset and no --format was
// given: the same encoding, kept in an artifact (ggml_blocks layout).
int RunConvertGguf(const ConvertOptions& options, bool to_artifact = false) {
  const auto start = Clock::now();
  auto request = converter::BuildGgufConvertRequest(options);
  if (!request.ok()) return Refuse(request.status());
  ProgressPrinter progress(ParseProgressMode(options.progress), ::isatty(STDERR_FILENO) == 1);
  request->log = progress.LineSink();
  request->progress = progress.Sink();
  auto done = to_artifact ? converter::ConvertToGgmlArtifact(*request)
                          : converter::ConvertToGguf(*request);
  progress.ClearLine();
  if (!done.ok()) return Fail(done.status());
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("wrote %s -> %s: %lld tensors (%s, %.2f bits/weight over the matrices%s), %s in %.2f s\n",
              options.input.c_str(), options.output.c_str(), static_cast<long long>(done->tensors),
              request->preset.c_str(), done->matrix_bits_per_weight,
              done->fallbacks == 0
                  ? ""
                  : (", " + std::to_string(done->fallbacks) + " fallback" +
                     (done->fallbacks == 1 ? "" : "s") + (options.verbose ? "" : ": -v lists them"))
                        .c_str(),
              to_artifact ? "an artifact of ggml blocks"
                          : support::FormatBytes(done->file_bytes).c_str(),
              seconds);
  return kExitOk;
}

int RunConvertOnnx(const ConvertOptions& options) {
  const auto start = Clock::now();
  auto request = converter::BuildOnnxConvertRequest(options);
  if (!request.ok()) return Refuse(request.status());
  ProgressPrinter progress(ParseProgressMode(options.progress), ::isatty(STDERR_FILENO) == 1);
  request->convert.stages.log = progress.LineSink();
  request->convert.stages.progress = progress.Sink();
  request->convert.stages.ir_out = &std::cerr;
  auto done = converter::ConvertToOnnx(*request);
  progress.ClearLine();
  if (!done.ok()) return Fail(done.status());
  const onnx_export::OnnxExportReport& r = done->report;
  if (options.verbose) {
    for (const auto& [op, count] : r.lower.lowered) {
      std::fprintf(stderr, "onnx: lowered %lld slimpack.%s\n", static_cast<long long>(count),
                   op.c_str());
    }
    if (r.qdq.convs + r.qdq.matmuls > 0) {
      std::fprintf(stderr, "onnx: QDQ: %lld Conv, %lld MatMul between DequantizeLinear/QuantizeLinear\n",
                   static_cast<long long>(r.qdq.convs), static_cast<long long>(r.qdq.matmuls));
    }
    if (r.weights.dequantize_weights + r.weights.matmul_nbits + r.weights.gather_block_quantized > 0) {
      std::fprintf(stderr,
                   "onnx: %lld int8 weights behind DequantizeLinear; group-wise: %lld MatMulNBits, "
                   "%lld GatherBlockQuantized\n",
                   static_cast<long long>(r.weights.dequantize_weights),
                   static_cast<long long>(r.weights.matmul_nbits),
                   static_cast<long long>(r.weights.gather_block_quantized));
    }
    if (r.weights.g_idx_folded > 0) {
      std::fprintf(stderr, "onnx: %lld act-order input Gathers folded into MatMulNBits g_idx\n",
                   static_cast<long long>(r.weights.g_idx_folded));
    }
    if (r.weights.blocked_dequantize > 0) {
      std::fprintf(stderr, "onnx: %lld group-wise weights behind blocked DequantizeLinear%s\n",
                   static_cast<long long>(r.weights.blocked_dequantize),
                   r.weights.opset_raised_from > 0
                       ? (" (model raised from opset " + std::to_string(r.weights.opset_raised_from) +
                          " to 21)").c_str()
                       : "");
    }
    if (!r.weights.float8_e4m3fn.empty()) {
      std::fprintf(stderr, "onnx: %zu FP8 E4M3 weights behind float8 DequantizeLinear%s\n",
                   r.weights.float8_e4m3fn.size(),
                   r.weights.opset_raised_from > 0
                       ? (" (model raised from opset " + std::to_string(r.weights.opset_raised_from) +
                          " to 21)").c_str()
                       : "");
    }
    if (r.widened > 0) {
      std::fprintf(stderr, "onnx: %lld f16/bf16 weights written as f32\n",
                   static_cast<long long>(r.widened));
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("wrote %s -> %s: %lld nodes, %lld initializers, %s%s in %.2f s\n",
              options.input.c_str(), options.output.c_str(), static_cast<long long>(r.nodes),
              static_cast<long long>(r.initializers),
              support::FormatBytes(done->model_bytes).c_str(),
              done->data_file.empty()
                  ? ""
                  : (" + " + support::FormatBytes(done->data_bytes) + " in " + done->data_file).c_str(),
              seconds);
  for (const std::string& f : done->carried_written) std::printf("wrote %s\n", f.c_str());
  return kExitOk;
}

}  // namespace

int RunConvert(const ConvertOptions& options) {
  if (!options.part.empty() && (options.format == "gguf" || options.format == "onnx")) {
    return Refuse(converter::UsageError(
        "--part", "splits an artifact's shards across machines; --format " + options.format +
                      " writes one file"));
  }
  if (options.format == "gguf") return RunConvertGguf(options);
  // A llama-quantize type (q4_k_m, q8_0, ...) for an artifact: its blocks
  // are stored as ggml lays them out (spec.md "ggml_blocks").
  if (options.format.empty() && !converter::GgmlSchemeOf(options).empty()) {
    if (!options.part.empty()) {
      return Refuse(converter::UsageError(
          "--part", "not supported with a llama-quantize --quant type yet (convert in one piece)"));
    }
    return RunConvertGguf(options, /*to_artifact=*/true);
  }
  if (options.format == "onnx") return RunConvertOnnx(options);
  if (!options.format.empty() && options.format != "artifact") {
    return Refuse(converter::UsageError(
        "--format", "'" + options.format + "' is not an output format (artifact, gguf, onnx)"));
  }
  const auto start = Clock::now();
  auto request = converter::BuildConvertRequest(options);
  if (!request.ok()) return Refuse(request.status());
  const ProgressMode mode = ParseProgressMode(options.progress);
  ProgressPrinter progress(mode, ::isatty(STDERR_FILENO) == 1);
  request->stages.log = progress.LineSink();
  request->stages.progress = progress.Sink();
  request->stages.ir_out = &std::cerr;
  const std::optional<ir::DType> dtype = request->recipe.dtype;

  WriteProgressPrinter printer(options.verbose, mode, progress.Sink());
  converter::ConvertCallbacks callbacks;
  if (printer.enabled()) {
    callbacks.progress = [&printer](const shard_writer::WriteProgress& p) { printer.Update(p); };
  }
  callbacks.fault_hook = FaultHookFromEnv();
  auto done = converter::Convert(*std::move(request), callbacks);
  progress.ClearLine();
  printer.Finish();
  if (!done.ok()) return Fail(done.status());

  const shard_writer::ArtifactSummary& summary = *done;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("%s%s %s -> %s: %llu tensors (%s), %u shard%s, %s written in %.2f s\n",
              summary.replaced ? "replaced" : "wrote",
              options.part.empty() ? "" : (" part " + options.part + " of").c_str(),
              options.input.c_str(),
              summary.output.c_str(), static_cast<unsigned long long>(summary.tensors),
              dtype ? std::string(ir::DTypeName(*dtype)).c_str() : "dtypes kept", summary.shards,
              summary.shards == 1 ? "" : "s",
              support::FormatBytes(summary.shard_bytes + summary.carried_bytes +
                                   summary.manifest_bytes)
                  .c_str(),
              seconds);
  if (options.report_dir.empty()) return kExitOk;
  ReportCommandOptions r;
  r.reference = options.input;
  r.candidate = options.output;
  r.data = options.report_data;
  r.output = options.report_dir;
  r.gate = options.gate;
  r.threads = options.threads > 0 ? options.threads : 1;
  r.progress = options.progress;
  return RunReport(r);
}

}  // namespace slimpack::cli
