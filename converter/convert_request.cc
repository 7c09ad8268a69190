#include "converter/convert_request.h"

#include <cmath>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "formats/shard/writer/artifact_writer.h"
#include "ir/sparse.h"
#include "passes/pipeline.h"
#include "quantize/size_planner.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

constexpr char kUsagePayload[] = "slimpack.dev/usage";

// A refused flag value: "FLAG: message", marked so the CLI exits 2.
absl::Status Usage(const std::string& flag, const absl::Status& s) {
  absl::Status out(s.code(), flag + ": " + std::string(s.message()));
  out.SetPayload(kUsagePayload, absl::Cord(flag));
  return out;
}
absl::Status Usage(const std::string& flag, const std::string& message) {
  return Usage(flag, absl::InvalidArgumentError(message));
}

// --dtype, --shard-size and the report flags.
// "I/N", 1 <= I <= N <= kMaxParts.
absl::StatusOr<shard_writer::PartSpec> ParsePart(const std::string& text) {
  const size_t slash = text.find('/');
  uint32_t index = 0, count = 0;
  if (slash == std::string::npos || !absl::SimpleAtoi(text.substr(0, slash), &index) ||
      !absl::SimpleAtoi(text.substr(slash + 1), &count) || count < 1 ||
      count > shard_writer::kMaxParts || index < 1 || index > count) {
    return Usage("--part", "'" + text + "' is not I/N with 1 <= I <= N <= " +
                               std::to_string(shard_writer::kMaxParts) + " (e.g. 2/3)");
  }
  return shard_writer::PartSpec{index - 1, count};
}

absl::Status MergeWriteFlags(const ConvertFlags& f, ConvertRequest& r) {
  if (!f.dtype.empty()) {
    auto d = ParseTargetDType(f.dtype);
    if (!d.ok()) return Usage("--dtype", d.status());
    r.recipe.dtype = *d;
  }
  if (!f.shard_size.empty()) {
    auto s = ParseByteSize(f.shard_size);
    if (!s.ok()) return Usage("--shard-size", s.status());
    if (*s < shard_writer::kMinShardSize) {
      return Usage("--shard-size", std::to_string(*s) + " bytes is below the minimum of " +
                                       std::to_string(shard_writer::kMinShardSize) + " (1M)");
    }
    r.recipe.shard_size = *s;
  }
  if (!r.recipe.shard_size) r.recipe.shard_size = shard_writer::kDefaultShardSize;
  if (f.report_dir.empty() != f.report_data.empty()) {
    return Usage("--report/--report-data",
                 "give both: --report DIR writes the report of the artifact on --report-data DATA");
  }
  if (!f.gate.empty() && f.report_dir.empty()) {
    return Usage("--gate", "gates a report: pass --report DIR too");
  }
  r.report_dir = f.report_dir;
  r.report_data = f.report_data;
  r.gate = f.gate;
  if (!f.part.empty()) {
    ASSIGN_OR_RETURN(r.part, ParsePart(f.part));
    if (!f.format.empty() && f.format != "artifact") {
      return Usage("--part", "splits an artifact's shards across machines; --format " + f.format +
                                 " writes one file");
    }
    if (!f.report_dir.empty()) {
      return Usage("--part", "a part is not a model to report on: run --report after "
                             "`slimpack merge`");
    }
  }
  return absl::OkStatus();
}

absl::Status MergePassFlags(const ConvertFlags& f, ConvertRequest& r) {
  if (!f.passes.empty()) {
    std::vector<std::string> names;
    if (f.passes != "none") {
      for (absl::string_view n : absl::StrSplit(f.passes, ',', absl::SkipEmpty())) {
        names.emplace_back(n);
      }
    }
    r.recipe.passes = names;
  }
  if (r.recipe.passes) {
    auto valid = passes::ValidatePassNames(*r.recipe.passes);
    if (!valid.ok()) {
      return f.passes.empty() ? Annotate(valid, f.recipe_path) : Usage("--passes", valid);
    }
  }
  StageOptions& s = r.stages;
  s.passes = r.recipe.passes;
  s.verify_each = f.verify_each;
  s.allow_requantize = f.allow_requantize;
  s.print_ir_after_all = f.print_ir_after_all;
  s.print_ir_after = f.print_ir_after;
  if (!f.print_ir_after.empty()) {
    auto valid = passes::ValidatePassNames(f.print_ir_after);
    if (!valid.ok()) return Usage("--print-ir-after", valid);
  }
  return absl::OkStatus();
}

absl::Status MergeQuantFlags(const ConvertFlags& f, ConvertRequest& r) {
  quantize::QuantConfig& q = r.stages.quant;
  if (r.recipe.quant) {
    ASSIGN_OR_RETURN(q, quantize::ParseQuantConfig(*r.recipe.quant, f.recipe_path));
  }
  if (f.quant == "w8a8") {
    if (f.group > 0 || f.asym || !f.algo.empty()) {
      return Usage("--quant w8a8", "--group/--asym/--algo choose weight-only schemes; w8a8 "
                                   "quantizes weights int8 per channel");
    }
    q.w8a8 = true;
  } else if (!f.quant.empty()) {
    // --group / --asym refine the name before its scale suffix.
    std::string name = f.quant;
    const std::string suffix(quantize::ScaleSuffixOf(name));
    name.resize(name.size() - suffix.size());
    // A bare int8 is per output channel; --group asks for int8-g<G>.
    if ((name == "int8" || name == "int8-asym") && f.group > 0) {
      name.insert(4, "-g" + std::to_string(f.group));
    }
    if (f.asym && name.find("-asym") == std::string::npos) name += "-asym";
    name += suffix;
    auto s = quantize::ParseWeightScheme(name, f.group > 0 ? f.group : 128);
    if (!s.ok()) return Usage("--quant", s.status());
    q.scheme = *s;
  } else if (f.group > 0 || f.asym) {
    return Usage("--group/--asym", "they refine --quant; pass --quant too");
  }
  if (!f.activation_type.empty()) {
    if (!q.w8a8) {
      return Usage("--activation-type", "chooses the activation integer type of --quant w8a8; "
                                        "weight-only schemes keep activations float");
    }
    q.w8a8_int8_activations = f.activation_type == "int8";
  }
  if (!f.algo.empty()) {
    auto a = quantize::ParseAlgorithm(f.algo);
    if (!a.ok()) return Usage("--algo", a.status());
    q.algorithm = *a;
  }
  if (!f.tensor_types.empty()) {
    return Usage("--tensor-type", "chooses ggml types: it goes with a llama-quantize --quant "
                                  "type (q4_k_m, q8_0, ...) or --format gguf; slimpack's own "
                                  "schemes take recipe rules (\"quant\": {\"rules\": [...]})");
  }
  if (!f.imatrix.empty()) {
    // llama-quantize's --imatrix: importance from a file (llama-imatrix's,
    // or `slimpack calibrate --imatrix`) instead of calibration runs.
    if (!q.active()) return Usage("--imatrix", "weights the quantization error: pass --quant too");
    if (f.algo.empty()) q.algorithm = quantize::Algorithm::kImatrix;
    if (q.algorithm != quantize::Algorithm::kImatrix) {
      return Usage("--imatrix", "feeds --algo imatrix, not --algo " + f.algo);
    }
    if (!f.calib.empty()) {
      return Usage("--imatrix", "give the importance as --imatrix FILE or as --calib DATA, not "
                                "both");
    }
    r.stages.imatrix = f.imatrix;
  }
  if (!f.hessians.empty()) {
    // GPTQ from precomputed statistics: every part of a split conversion
    // reads the same file, and no part runs the model.
    if (!q.active()) return Usage("--hessians", "feeds GPTQ's quantization: pass --quant too");
    if (f.algo.empty()) q.algorithm = quantize::Algorithm::kGptq;
    if (q.algorithm != quantize::Algorithm::kGptq) {
      return Usage("--hessians", "feeds --algo gptq, not --algo " + f.algo);
    }
    if (!f.calib.empty() || !f.imatrix.empty()) {
      return Usage("--hessians", "give GPTQ's statistics as --hessians FILE or as --calib DATA, "
                                 "not both (nor with --imatrix)");
    }
    r.stages.hessians = f.hessians;
  }
  if (!f.awq_inputs.empty()) {
    // AWQ from captured inputs: the same scales as --calib, no model run,
    // one file for every part of a split conversion.
    if (!q.active()) return Usage("--awq-inputs", "feeds AWQ's quantization: pass --quant too");
    if (f.algo.empty()) q.algorithm = quantize::Algorithm::kAwq;
    if (q.algorithm != quantize::Algorithm::kAwq) {
      return Usage("--awq-inputs", "feeds --algo awq, not --algo " + f.algo);
    }
    if (!f.calib.empty() || !f.imatrix.empty() || !f.hessians.empty()) {
      return Usage("--awq-inputs", "give AWQ's inputs as --awq-inputs FILE or as --calib DATA, "
                                   "not both (nor with --imatrix or --hessians)");
    }
    r.stages.awq_inputs = f.awq_inputs;
  }
  if (f.calib_samples > 0) q.calib_samples = f.calib_samples;
  if (!f.target_size.empty()) {
    auto b = quantize::ParseTargetSize(f.target_size);
    if (!b.ok()) return Usage("--target-size", b.status());
    q.target_bytes = *b;
  }
  if (f.target_bpw > 0) q.target_bpw = f.target_bpw;
  if (q.target_bytes && q.target_bpw) {
    return Usage("--target-size/--target-bpw", "give one size target, not both");
  }
  return absl::OkStatus();
}

// --prune RATIO / --prune-budget-params: how much to remove.
absl::Status MergePruneAmount(const ConvertFlags& f, ConvertRequest& r) {
  prune::PruneOptions& p = r.stages.prune;
  if (!f.prune.empty()) {
    double ratio = 0;
    if (!absl::SimpleAtod(f.prune, &ratio) || !(ratio >= 0 && ratio < 1)) {
      return Usage("--prune", "'" + f.prune + "' is not a ratio in [0, 1) (e.g. 0.2 removes 20 %)");
    }
    p.ratio = ratio;
    p.budget_params = 0;  // the command line's ratio replaces a recipe's budget
  } else if (!r.recipe.prune && f.prune_rules.empty() && f.prune_budget_params.empty() &&
             (!f.prune_criterion.empty() || !f.prune_target.empty() || f.prune_refit)) {
    return Usage("--prune-criterion/--prune-target/--prune-refit",
                 "they refine --prune; pass --prune RATIO, --prune-rules or "
                 "--prune-budget-params too");
  }
  if (!f.prune_budget_params.empty()) {
    double budget = 0;
    if (!absl::SimpleAtod(f.prune_budget_params, &budget) || !(budget > 0) ||
        (budget >= 1 && budget != std::floor(budget))) {
      return Usage("--prune-budget-params",
                   "'" + f.prune_budget_params +
                       "' is neither a fraction of the parameters kept in (0, 1) nor a parameter "
                       "count (e.g. 0.8 or 600000)");
    }
    if (!f.prune.empty()) {
      return Usage("--prune-budget-params",
                   "--prune and --prune-budget-params exclude each other (the budget chooses the "
                   "per-layer counts)");
    }
    p.ratio = 0;
    p.budget_params = budget;
  }
  return absl::OkStatus();
}

absl::Status MergePruneFlags(const ConvertFlags& f, ConvertRequest& r) {
  prune::PruneOptions& p = r.stages.prune;
  if (r.recipe.prune) {
    ASSIGN_OR_RETURN(p, prune::ParsePruneJson(*r.recipe.prune, f.recipe_path));
  }
  if (!f.prune_rules.empty()) {
    ASSIGN_OR_RETURN(p.rules, prune::LoadPruneRulesFile(f.prune_rules));
  }
  RETURN_IF_ERROR(MergePruneAmount(f, r));
  if (!f.prune_criterion.empty()) {
    auto c = prune::ParseCriterion(f.prune_criterion);
    if (!c.ok()) return Usage("--prune-criterion", c.status());
    p.criterion = *c;
  }
  if (!f.prune_target.empty()) {
    auto t = prune::ParseTarget(f.prune_target);
    if (!t.ok()) return Usage("--prune-target", t.status());
    p.target = *t;
  }
  if (f.prune_refit) p.refit = true;
  if (f.calib_samples > 0) p.calib_samples = f.calib_samples;
  if (p.active() && f.calib.empty() &&
      (p.criterion == prune::Criterion::kActivation || p.criterion == prune::Criterion::kLoss ||
       p.refit)) {
    return Usage(p.refit ? std::string("--prune-refit")
                         : "--prune-criterion " + std::string(prune::CriterionName(p.criterion)),
                 "needs calibration data: pass --calib FILES (e.g. token windows as .npy)");
  }
  return absl::OkStatus();
}

// --sparsity / --sparsity-pattern over the recipe's "sparsity" object.
absl::Status MergeSparsityAmount(const ConvertFlags& f, ConvertRequest& r) {
  std::optional<sparsify::SparsifyOptions>& sp = r.stages.sparsify;
  if (!sp) sp = sparsify::SparsifyOptions{};
  if (!f.sparsity_pattern.empty()) {
    auto p = ir::ParseSparsityPattern(f.sparsity_pattern);
    if (!p.ok()) return Usage("--sparsity-pattern", p.status());
    sp->pattern = *p;
  }
  const bool two_four = sp->pattern == ir::SparsityPattern::k2of4;
  if (!f.sparsity.empty()) {
    double ratio = 0;
    if (!absl::SimpleAtod(f.sparsity, &ratio) || !(ratio >= 0 && ratio < 1) ||
        (two_four && ratio != 0.5)) {
      return Usage("--sparsity",
                   "'" + f.sparsity + "' is not " +
                       (two_four ? std::string("0.5 (the 2:4 pattern zeroes half of each group of 4)")
                                 : std::string("a ratio in [0, 1) (e.g. 0.5 zeroes half of each row)")));
    }
    sp->ratio = ratio;
  } else if (two_four) {
    sp->ratio = 0.5;
  } else if (!r.recipe.sparsity) {
    return Usage("--sparsity-pattern", "the unstructured pattern needs a ratio: pass --sparsity RATIO");
  }
  return absl::OkStatus();
}

absl::Status MergeSparsityFlags(const ConvertFlags& f, ConvertRequest& r) {
  std::optional<sparsify::SparsifyOptions>& sp = r.stages.sparsify;
  if (r.recipe.sparsity) {
    ASSIGN_OR_RETURN(sp, sparsify::ParseSparsifyJson(*r.recipe.sparsity, f.recipe_path));
  }
  if (!f.sparsity.empty() || !f.sparsity_pattern.empty()) {
    RETURN_IF_ERROR(MergeSparsityAmount(f, r));
  } else if (!f.sparsity_criterion.empty() && !r.recipe.sparsity) {
    return Usage("--sparsity-criterion",
                 "refines --sparsity; pass --sparsity RATIO or --sparsity-pattern 2:4 too");
  }
  if (!f.sparsity_criterion.empty() && sp) {
    auto c = sparsify::ParseCriterion(f.sparsity_criterion);
    if (!c.ok()) return Usage("--sparsity-criterion", c.status());
    sp->criterion = *c;
  }
  if (sp && f.calib_samples > 0) sp->calib_samples = f.calib_samples;
  return absl::OkStatus();
}

// Combinations the product does not support, whichever way they were asked
// for (recipe or flags).
absl::Status CheckCompatibility(const ConvertFlags& f, const StageOptions& s) {
  if (!s.sparsify) return absl::OkStatus();
  if (s.sparsify->criterion == sparsify::Criterion::kWanda && f.calib.empty()) {
    return Usage("--sparsity-criterion wanda",
                 "needs calibration data: pass --calib FILES (e.g. token windows as .npy)");
  }
  // Quantizers that would not keep the zeros exact.
  if (s.quant.w8a8) {
    return Usage("--sparsity", absl::UnimplementedError(
        "sparsity with --quant w8a8 is not supported (the integer rewrite drops the "
        "sparsity records); use a weight-only scheme"));
  }
  if (s.quant.active() && s.quant.algorithm == quantize::Algorithm::kGptq) {
    return Usage("--sparsity", absl::UnimplementedError(
        "sparsity with --algo gptq is not supported: GPTQ's error feedback refills pruned "
        "weights; use rtn, rtn-mse, imatrix or awq"));
  }
  if (s.quant.active() && s.quant.scheme && !s.quant.scheme->symmetric) {
    return Usage("--sparsity", absl::UnimplementedError(
        "sparsity with an asymmetric scheme (" + s.quant.scheme->Name() +
        ") is not supported: only symmetric quantization keeps zeros exact (q = 0 decodes to 0)"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsUsageError(const absl::Status& status) {
  return status.GetPayload(kUsagePayload).has_value();
}

absl::Status UsageError(const std::string& flag, const std::string& message) {
  return Usage(flag, message);
}

absl::StatusOr<ConvertRequest> BuildConvertRequest(const ConvertFlags& given) {
  // `flags.recipe_path` names the recipe's source in the merge errors below,
  // including a recipe read from an artifact.
  ConvertFlags flags = given;
  if (flags.format != "onnx") {
    const char* onnx_only = !flags.onnx_profile.empty()        ? "--onnx-profile"
                            : !flags.onnx_quant_format.empty() ? "--onnx-quant-format"
                            : flags.onnx_external_data         ? "--onnx-external-data"
                            : flags.onnx_kv_cache              ? "--onnx-kv-cache"
                            : flags.onnx_gqa                   ? "--onnx-gqa"
                                                               : nullptr;
    if (onnx_only != nullptr) return Usage(onnx_only, "applies to --format onnx only");
  }
  ConvertRequest r;
  r.input = flags.input;
  r.output = flags.output;
  r.force = flags.force;
  r.allow_incomplete = flags.allow_incomplete;
  r.threads = flags.threads;
  if (!flags.recipe_from.empty()) {
    if (!flags.recipe_path.empty()) {
      return Usage("--recipe-from", "give --recipe or --recipe-from, not both");
    }
    ASSIGN_OR_RETURN(ArtifactRecipe from, ReadArtifactRecipe(flags.recipe_from));
    r.recipe = from.recipe;
    flags.recipe_path = from.source + " producer.recipe";
    r.recipe_from = std::move(from);
  } else if (!flags.recipe_path.empty()) {
    ASSIGN_OR_RETURN(r.recipe, ReadRecipeFile(flags.recipe_path));
  }
  // Flags override the recipe file; the effective recipe is recorded.
  RETURN_IF_ERROR(MergeWriteFlags(flags, r));
  RETURN_IF_ERROR(MergePassFlags(flags, r));
  RETURN_IF_ERROR(MergeQuantFlags(flags, r));
  RETURN_IF_ERROR(MergePruneFlags(flags, r));
  RETURN_IF_ERROR(MergeSparsityFlags(flags, r));
  RETURN_IF_ERROR(CheckCompatibility(flags, r.stages));
  StageOptions& s = r.stages;
  if (s.sparsify) r.recipe.sparsity = sparsify::SparsifyOptionsToJson(*s.sparsify);
  s.calib = flags.calib;
  s.threads = flags.threads > 0 ? flags.threads : 1;
  s.verbose = flags.verbose;
  if (s.quant.active()) r.recipe.quant = quantize::QuantConfigToJson(s.quant);
  return r;
}

}  // namespace slimpack::converter
