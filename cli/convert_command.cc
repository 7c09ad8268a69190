#include "cli/convert_command.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

#include "cli/exit_codes.h"
#include "converter/float_convert.h"
#include "converter/import.h"
#include "converter/recipe.h"
#include "formats/shard/writer/artifact_writer.h"
#include "formats/shard/writer/output_preflight.h"

namespace slimpack::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string Bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

// A live line on a terminal; with -v and no terminal, one line per file.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool verbose)
      : tty_(::isatty(STDERR_FILENO) == 1), verbose_(verbose) {}

  bool enabled() const { return tty_ || verbose_; }

  void Update(const shard_writer::WriteProgress& p) {
    const auto now = Clock::now();
    if (tty_) {
      if (p.last_file.empty() && now - last_ < std::chrono::milliseconds(100)) {
        return;
      }
      last_ = now;
      const int pct = p.bytes_total
                          ? static_cast<int>(100.0 * p.bytes_done / p.bytes_total)
                          : 100;
      std::fprintf(stderr, "\r\033[Kconvert: %s / %s (%d%%), %u/%u files",
                   Bytes(p.bytes_done).c_str(), Bytes(p.bytes_total).c_str(),
                   pct, p.files_done, p.files_total);
      std::fflush(stderr);
      drawn_ = true;
    } else if (verbose_ && !p.last_file.empty()) {
      std::fprintf(stderr, "convert: wrote %.*s [%u/%u files, %s of %s]\n",
                   static_cast<int>(p.last_file.size()), p.last_file.data(),
                   p.files_done, p.files_total, Bytes(p.bytes_done).c_str(),
                   Bytes(p.bytes_total).c_str());
    }
  }

  void Finish() {
    if (drawn_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  const bool tty_;
  const bool verbose_;
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

int Usage(const std::string& flag, const absl::Status& s) {
  std::fprintf(stderr, "slimpack convert: %s: %s\n", flag.c_str(),
               std::string(s.message()).c_str());
  return kExitUsage;
}

}  // namespace

int RunConvert(const ConvertOptions& options) {
  const auto start = Clock::now();
  converter::Recipe recipe;
  if (!options.recipe_path.empty()) {
    auto r = converter::ReadRecipeFile(options.recipe_path);
    if (!r.ok()) return Fail(r.status());
    recipe = *std::move(r);
  }
  // Flags override the recipe file; the effective recipe is recorded.
  if (!options.dtype.empty()) {
    auto d = converter::ParseTargetDType(options.dtype);
    if (!d.ok()) return Usage("--dtype", d.status());
    recipe.dtype = *d;
  }
  if (!options.shard_size.empty()) {
    auto s = converter::ParseByteSize(options.shard_size);
    if (!s.ok()) return Usage("--shard-size", s.status());
    if (*s < shard_writer::kMinShardSize) {
      return Usage("--shard-size",
                   absl::InvalidArgumentError(
                       std::to_string(*s) + " bytes is below the minimum of " +
                       std::to_string(shard_writer::kMinShardSize) + " (1M)"));
    }
    recipe.shard_size = *s;
  }
  if (!recipe.shard_size) recipe.shard_size = shard_writer::kDefaultShardSize;

  // Preflight before the import: a bad output fails in milliseconds.
  auto state = shard_writer::PreflightOutput(options.output, options.force);
  if (!state.ok()) return Fail(state.status());

  auto model = converter::ImportModel(options.input);
  if (!model.ok()) return Fail(model.status());
  for (const std::string& w : model->warnings) {
    std::fprintf(stderr, "warning: %s\n", w.c_str());
  }

  ProgressPrinter printer(options.verbose);
  shard_writer::ArtifactOptions write;
  write.shard_size = *recipe.shard_size;
  write.threads = options.threads;
  write.force = options.force;
  write.encoder = converter::FloatCastEncoder(recipe.dtype);
  write.recipe = converter::RecipeToJson(recipe);
  if (printer.enabled()) {
    write.progress = [&printer](const shard_writer::WriteProgress& p) {
      printer.Update(p);
    };
  }
  write.fault_hook = FaultHookFromEnv();
  auto summary = shard_writer::WriteArtifact(*model, options.output, write);
  printer.Finish();
  if (!summary.ok()) return Fail(summary.status());

  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "%s %s -> %s: %llu tensors (%s), %u shard%s, %s written in %.2f s\n",
      summary->replaced ? "replaced" : "wrote", options.input.c_str(),
      summary->output.c_str(),
      static_cast<unsigned long long>(summary->tensors),
      recipe.dtype ? std::string(ir::DTypeName(*recipe.dtype)).c_str()
                   : "dtypes kept",
      summary->shards, summary->shards == 1 ? "" : "s",
      Bytes(summary->shard_bytes + summary->carried_bytes +
            summary->manifest_bytes)
          .c_str(),
      seconds);
  return kExitOk;
}

}  // namespace slimpack::cli
