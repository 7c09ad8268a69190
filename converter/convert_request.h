// One validated description of a `slimpack convert` run: the recipe file and
// the command-line flags merged (flags win), the product's compatibility
// rules applied once, so a recipe user and a flag user meet the same rules.
// Refusals say whether a flag was malformed (a usage error, exit 2) or a
// file was (exit 1): IsUsageError() tells them apart.
#ifndef SLIMPACK_CONVERTER_CONVERT_REQUEST_H_
#define SLIMPACK_CONVERTER_CONVERT_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/convert_stages.h"
#include "converter/recipe.h"
#include "converter/recipe_from_artifact.h"
#include "formats/shard/writer/merge_parts.h"

namespace slimpack::converter {

// The user's words, as typed ("" / 0 / false = not given).
struct ConvertFlags {
  std::string input;
  std::string output;
  std::string dtype;        // "" = from the recipe, else keep
  std::string shard_size;   // "" = from the recipe, else 256M
  std::string recipe_path;  // "" = none
  // An artifact whose producer.recipe is the recipe (instead of
  // recipe_path), and whose producer.calibration the --calib files must
  // match: rebuilding it from the same inputs gives the same bytes.
  std::string recipe_from;
  int threads = 0;          // 0 = one per core
  bool force = false;
  bool verbose = false;
  // Convert an HF checkpoint that lacks expected weights (ir::Model::
  // incomplete) instead of refusing it: the artifact will not run as a
  // decoder, which is what a user slicing a checkpoint for tests may want.
  bool allow_incomplete = false;
  // Quantize weights that are already quantized (GGUF blocks, GPTQ/AWQ/
  // compressed-tensors/FP8 codes): decoded to f32 first (requantize.h), as
  // llama-quantize --allow-requantize does.
  bool allow_requantize = false;
  // Graph passes: "" = the recipe's list or the default pipeline,
  // "none" = no passes, else comma-separated names.
  std::string passes;
  bool verify_each = false;
  bool print_ir_after_all = false;
  std::vector<std::string> print_ir_after;
  // Quantization: a scheme name (int8, int4, int4-g32-asym, ...), "" = the
  // recipe's. --group/--asym refine a bare int4; --algo picks the algorithm.
  std::string quant;
  int64_t group = 0;
  bool asym = false;
  std::string algo;
  // --quant w8a8: "uint8" or "int8" activations ("" = the recipe's, else
  // uint8), as ONNX Runtime's quantize_static activation_type.
  std::string activation_type;
  std::vector<std::string> calib;
  int64_t calib_samples = 0;
  // --format gguf: llama.cpp's importance matrix (llama-imatrix -o FILE).
  std::string imatrix;
  // --hessians: GPTQ statistics (`slimpack calibrate --hessians`) for
  // --algo gptq instead of calibration runs.
  std::string hessians;
  // --awq-inputs: AWQ's inputs (`slimpack calibrate --awq-inputs`) for
  // --algo awq instead of calibration runs.
  std::string awq_inputs;
  // llama-quantize types: "PATTERN=TYPE" per --tensor-type (gguf_recipe.h).
  std::vector<std::string> tensor_types;
  // --progress: auto (a live line on a terminal), json (lines for CI logs),
  // none. Read by the CLI only.
  std::string progress = "auto";
  // Size-target planner: "3.8GB" / "3.5GiB" for the whole artifact, or an
  // average bits per weight over the quantized tensors (0 = unset).
  std::string target_size;
  double target_bpw = 0;
  // After writing: `slimpack report` of the artifact against the input on
  // report_data, into report_dir, gated by `gate` (exit 3 when it fails).
  std::string report_dir;
  std::vector<std::string> report_data;
  std::string gate;
  // Weight sparsity (prune/sparsify.h): ratio as typed ("" = off; 2:4
  // implies 0.5), pattern unstructured|2:4, criterion magnitude|wanda.
  std::string sparsity;
  std::string sparsity_pattern;
  std::string sparsity_criterion;
  // Structured pruning: ratio as typed ("" = off), criterion
  // l1|l2|activation|loss, target mlp|heads|both, least-squares refit,
  // per-layer rules file (prune/decoder/prune_rules.h), parameter budget as
  // typed (fraction kept or count, "" = none).
  std::string prune;
  std::string prune_criterion;
  std::string prune_target;
  bool prune_refit = false;
  std::string prune_rules;
  std::string prune_budget_params;
  // Output format: "" / "artifact" (a shard artifact directory), "gguf"
  // (one GGUF file for llama.cpp; converter/convert_gguf.h) or "onnx" (an
  // ONNX model for ONNX Runtime; converter/convert_onnx.h).
  std::string format;
  // --format onnx only: "standard" | "ort" (contrib ops), "qdq" |
  // "qoperator" (static W8A8 encoding), every tensor >= 1 KiB in an
  // external data file beside the model ("" / false = not given).
  std::string onnx_profile;
  std::string onnx_quant_format;
  bool onnx_external_data = false;
  // --onnx-kv-cache: an HF decoder with past_key_values / present (hf/
  // llama_graph_builder.h) and its tokenizer/config files beside the model.
  bool onnx_kv_cache = false;
  // --onnx-gqa: with --onnx-kv-cache and --onnx-profile ort, attention as
  // com.microsoft.GroupQueryAttention (hf::DecoderGraphOptions).
  bool onnx_gqa = false;
  // --part I/N ("" = the whole artifact): this machine's share of a
  // conversion split across N machines (docs/scale-out.md).
  std::string part;
};

struct ConvertRequest {
  std::string input;
  std::string output;
  bool force = false;
  bool allow_incomplete = false;
  int threads = 0;  // 0 = one per core (the writer); stages get >= 1
  // The effective recipe, recorded in the manifest (passes filled in after
  // the pipeline ran).
  Recipe recipe;
  // --recipe-from: the calibration files the artifact recorded, checked
  // against this run's --calib before anything is imported.
  std::optional<ArtifactRecipe> recipe_from;
  StageOptions stages;
  // Artifact output: RTN-family weights are quantized as their shards are
  // written (bounded memory; StageOptions::defer_weight_quant). false:
  // every weight is quantized before the writer starts. Same bytes.
  bool quantize_while_writing = true;
  // --part I/N: write only part I of the artifact (formats/shard/writer/
  // merge_parts.h); `slimpack merge` joins the parts.
  std::optional<shard_writer::PartSpec> part;
  std::string report_dir;
  std::vector<std::string> report_data;
  std::string gate;
};

// Merges `flags` over the recipe file and checks every rule. Errors name the
// flag or the recipe file and the offending value.
absl::StatusOr<ConvertRequest> BuildConvertRequest(const ConvertFlags& given);

// True for a refusal of a flag's value (exit code 2); false for a bad input
// file, recipe or output (exit code 1).
bool IsUsageError(const absl::Status& status);

// A refusal of `flag`'s value: "FLAG: message", tagged for IsUsageError.
absl::Status UsageError(const std::string& flag, const std::string& message);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_CONVERT_REQUEST_H_
