#include "cli/convert_command.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "cli/convert_stages.h"
#include "cli/exit_codes.h"
#include "cli/report_command.h"
#include "passes/pipeline.h"
#include "support/status_macros.h"
#include "passes/quant_rules.h"
#include "passes/size_planner.h"
#include "converter/float_convert.h"
#include "converter/import.h"
#include "converter/ir/sparse.h"
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

  if (options.report_dir.empty() != options.report_data.empty()) {
    return Usage("--report/--report-data", absl::InvalidArgumentError(
        "give both: --report DIR writes the report of the artifact on --report-data DATA"));
  }
  if (!options.gate.empty() && options.report_dir.empty()) {
    return Usage("--gate", absl::InvalidArgumentError("gates a report: pass --report DIR too"));
  }

  StageOptions stages;
  if (!options.passes.empty()) {
    std::vector<std::string> names;
    if (options.passes != "none") {
      for (absl::string_view n : absl::StrSplit(options.passes, ',', absl::SkipEmpty())) {
        names.emplace_back(n);
      }
    }
    recipe.passes = names;
  }
  if (recipe.passes) {
    auto valid = passes::ValidatePassNames(*recipe.passes);
    if (!valid.ok()) {
      return options.passes.empty() ? Fail(Annotate(valid, options.recipe_path))
                                    : Usage("--passes", valid);
    }
  }
  stages.passes = recipe.passes;
  stages.verify_each = options.verify_each;
  stages.print_ir_after_all = options.print_ir_after_all;
  stages.print_ir_after = options.print_ir_after;
  if (!options.print_ir_after.empty()) {
    auto valid = passes::ValidatePassNames(options.print_ir_after);
    if (!valid.ok()) return Usage("--print-ir-after", valid);
  }
  if (recipe.quant) {
    auto q = quantize::ParseQuantConfig(*recipe.quant, options.recipe_path);
    if (!q.ok()) return Fail(q.status());
    stages.quant = *q;
  }
  if (options.quant == "w8a8") {
    if (options.group > 0 || options.asym || !options.algo.empty()) {
      return Usage("--quant w8a8", absl::InvalidArgumentError(
          "--group/--asym/--algo choose weight-only schemes; w8a8 quantizes weights int8 per channel"));
    }
    stages.quant.w8a8 = true;
  } else if (!options.quant.empty()) {
    std::string name = options.quant;
    if (options.asym && name.find("-asym") == std::string::npos) name += "-asym";
    auto s = quantize::ParseWeightScheme(name, options.group > 0 ? options.group : 128);
    if (!s.ok()) return Usage("--quant", s.status());
    stages.quant.scheme = *s;
  } else if (options.group > 0 || options.asym) {
    return Usage("--group/--asym", absl::InvalidArgumentError("they refine --quant; pass --quant too"));
  }
  if (!options.algo.empty()) {
    auto a = quantize::ParseAlgorithm(options.algo);
    if (!a.ok()) return Usage("--algo", a.status());
    stages.quant.algorithm = *a;
  }
  if (options.calib_samples > 0) stages.quant.calib_samples = options.calib_samples;
  if (!options.target_size.empty()) {
    auto b = quantize::ParseTargetSize(options.target_size);
    if (!b.ok()) return Usage("--target-size", b.status());
    stages.quant.target_bytes = *b;
  }
  if (options.target_bpw > 0) stages.quant.target_bpw = options.target_bpw;
  if (stages.quant.target_bytes && stages.quant.target_bpw) {
    return Usage("--target-size/--target-bpw",
                 absl::InvalidArgumentError("give one size target, not both"));
  }
  if (recipe.prune) {
    auto p = prune::ParsePruneJson(*recipe.prune, options.recipe_path);
    if (!p.ok()) return Fail(p.status());
    stages.prune = *p;
  }
  if (!options.prune.empty()) {
    double ratio = 0;
    if (!absl::SimpleAtod(options.prune, &ratio) || !(ratio >= 0 && ratio < 1)) {
      return Usage("--prune", absl::InvalidArgumentError(
          "'" + options.prune + "' is not a ratio in [0, 1) (e.g. 0.2 removes 20 %)"));
    }
    stages.prune.ratio = ratio;
    stages.prune.budget_params = 0;  // the command line's ratio replaces a recipe's budget
  } else if (!recipe.prune && options.prune_rules.empty() &&
             options.prune_budget_params.empty() &&
             (!options.prune_criterion.empty() || !options.prune_target.empty() ||
              options.prune_refit)) {
    return Usage("--prune-criterion/--prune-target/--prune-refit",
                 absl::InvalidArgumentError(
                     "they refine --prune; pass --prune RATIO, --prune-rules or "
                     "--prune-budget-params too"));
  }
  if (!options.prune_rules.empty()) {
    auto rules = prune::LoadPruneRulesFile(options.prune_rules);
    if (!rules.ok()) return Fail(rules.status());
    stages.prune.rules = *std::move(rules);
  }
  if (!options.prune_budget_params.empty()) {
    double budget = 0;
    if (!absl::SimpleAtod(options.prune_budget_params, &budget) || !(budget > 0) ||
        (budget >= 1 && budget != std::floor(budget))) {
      return Usage("--prune-budget-params", absl::InvalidArgumentError(
          "'" + options.prune_budget_params + "' is neither a fraction of the parameters kept "
          "in (0, 1) nor a parameter count (e.g. 0.8 or 600000)"));
    }
    if (!options.prune.empty()) {
      return Usage("--prune-budget-params", absl::InvalidArgumentError(
          "--prune and --prune-budget-params exclude each other (the budget chooses the "
          "per-layer counts)"));
    }
    stages.prune.ratio = 0;
    stages.prune.budget_params = budget;
  }
  if (!options.prune_criterion.empty()) {
    auto c = prune::ParseCriterion(options.prune_criterion);
    if (!c.ok()) return Usage("--prune-criterion", c.status());
    stages.prune.criterion = *c;
  }
  if (!options.prune_target.empty()) {
    auto t = prune::ParseTarget(options.prune_target);
    if (!t.ok()) return Usage("--prune-target", t.status());
    stages.prune.target = *t;
  }
  if (options.prune_refit) stages.prune.refit = true;
  if (options.calib_samples > 0) stages.prune.calib_samples = options.calib_samples;
  if (stages.prune.active() && options.calib.empty() &&
      (stages.prune.criterion == prune::Criterion::kActivation ||
       stages.prune.criterion == prune::Criterion::kLoss || stages.prune.refit)) {
    return Usage(stages.prune.refit ? std::string("--prune-refit")
                                    : "--prune-criterion " +
                                          std::string(prune::CriterionName(stages.prune.criterion)),
                 absl::InvalidArgumentError("needs calibration data: pass --calib FILES "
                                            "(e.g. token windows as .npy)"));
  }
  // Sparsity: the recipe's "sparsity" object, refined by the flags.
  if (recipe.sparsity) {
    auto sp = sparsify::ParseSparsifyJson(*recipe.sparsity, options.recipe_path);
    if (!sp.ok()) return Fail(sp.status());
    stages.sparsify = *sp;
  }
  if (!options.sparsity.empty() || !options.sparsity_pattern.empty()) {
    if (!stages.sparsify) stages.sparsify = sparsify::SparsifyOptions{};
    if (!options.sparsity_pattern.empty()) {
      auto p = ir::ParseSparsityPattern(options.sparsity_pattern);
      if (!p.ok()) return Usage("--sparsity-pattern", p.status());
      stages.sparsify->pattern = *p;
    }
    const bool two_four = stages.sparsify->pattern == ir::SparsityPattern::k2of4;
    if (!options.sparsity.empty()) {
      double ratio = 0;
      if (!absl::SimpleAtod(options.sparsity, &ratio) || !(ratio >= 0 && ratio < 1) ||
          (two_four && ratio != 0.5)) {
        return Usage("--sparsity", absl::InvalidArgumentError(
            "'" + options.sparsity + "' is not " +
            (two_four ? std::string("0.5 (the 2:4 pattern zeroes half of each group of 4)")
                      : std::string("a ratio in [0, 1) (e.g. 0.5 zeroes half of each row)"))));
      }
      stages.sparsify->ratio = ratio;
    } else if (two_four) {
      stages.sparsify->ratio = 0.5;
    } else if (!recipe.sparsity) {
      return Usage("--sparsity-pattern", absl::InvalidArgumentError(
          "the unstructured pattern needs a ratio: pass --sparsity RATIO"));
    }
  } else if (!options.sparsity_criterion.empty() && !recipe.sparsity) {
    return Usage("--sparsity-criterion", absl::InvalidArgumentError(
        "refines --sparsity; pass --sparsity RATIO or --sparsity-pattern 2:4 too"));
  }
  if (!options.sparsity_criterion.empty() && stages.sparsify) {
    auto c = sparsify::ParseCriterion(options.sparsity_criterion);
    if (!c.ok()) return Usage("--sparsity-criterion", c.status());
    stages.sparsify->criterion = *c;
  }
  if (stages.sparsify) {
    if (options.calib_samples > 0) stages.sparsify->calib_samples = options.calib_samples;
    if (stages.sparsify->criterion == sparsify::Criterion::kWanda && options.calib.empty()) {
      return Usage("--sparsity-criterion wanda", absl::InvalidArgumentError(
          "needs calibration data: pass --calib FILES (e.g. token windows as .npy)"));
    }
    // Quantizers that would not keep the zeros exact.
    if (stages.quant.w8a8) {
      return Usage("--sparsity", absl::UnimplementedError(
          "sparsity with --quant w8a8 is not supported (the integer rewrite drops the "
          "sparsity records); use a weight-only scheme"));
    }
    if (stages.quant.active() && stages.quant.algorithm == quantize::Algorithm::kGptq) {
      return Usage("--sparsity", absl::UnimplementedError(
          "sparsity with --algo gptq is not supported: GPTQ's error feedback refills pruned "
          "weights; use rtn, rtn-mse, imatrix or awq"));
    }
    if (stages.quant.active() && stages.quant.scheme && !stages.quant.scheme->symmetric) {
      return Usage("--sparsity", absl::UnimplementedError(
          "sparsity with an asymmetric scheme (" + stages.quant.scheme->Name() +
          ") is not supported: only symmetric quantization keeps zeros exact "
          "(q = 0 decodes to 0)"));
    }
    recipe.sparsity = sparsify::SparsifyOptionsToJson(*stages.sparsify);
  }
  stages.calib = options.calib;
  stages.threads = options.threads > 0 ? options.threads : 1;
  stages.verbose = options.verbose;
  if (stages.quant.active()) recipe.quant = quantize::QuantConfigToJson(stages.quant);

  // Preflight before the import: a bad output fails in milliseconds.
  auto state = shard_writer::PreflightOutput(options.output, options.force);
  if (!state.ok()) return Fail(state.status());

  auto model = converter::ImportModel(options.input);
  if (!model.ok()) return Fail(model.status());
  for (const std::string& w : model->warnings) {
    std::fprintf(stderr, "warning: %s\n", w.c_str());
  }

  auto staged = RunConvertStages(*model, stages);
  if (!staged.ok()) return Fail(staged.status());
  recipe.passes = staged->passes_run;

  ProgressPrinter printer(options.verbose);
  shard_writer::ArtifactOptions write;
  write.shard_size = *recipe.shard_size;
  write.threads = options.threads;
  write.force = options.force;
  write.encoder = converter::FloatCastEncoder(recipe.dtype);
  if (write.encoder.output_dtype) {
    // Scales and zero points of quantized tensors keep their dtype: the
    // layouts fix them (f32 scales; zero points of the quantized dtype).
    std::set<std::string> aux;
    for (const ir::Tensor& t : model->graph.initializers()) {
      if (t.quant.quantized()) {
        aux.insert(t.quant.scale);
        if (!t.quant.zero_point.empty()) aux.insert(t.quant.zero_point);
      }
    }
    auto inner = write.encoder.output_dtype;
    write.encoder.output_dtype = [inner, aux](const ir::Tensor& t) {
      return aux.count(t.name) ? t.dtype : inner(t);
    };
  }
  write.recipe = converter::RecipeToJson(recipe);
  if (stages.prune.active()) write.recipe["prune"] = prune::PruneOptionsToJson(stages.prune);
  write.passes = staged->records;
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
  auto report = [&]() {
    if (options.report_dir.empty()) return kExitOk;
    ReportCommandOptions r;
    r.reference = options.input;
    r.candidate = options.output;
    r.data = options.report_data;
    r.output = options.report_dir;
    r.gate = options.gate;
    r.threads = options.threads > 0 ? options.threads : 1;
    return RunReport(r);
  };
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
  return report();
}

}  // namespace slimpack::cli
