// `slimpack convert INPUT -o model.gguf --format gguf`: an HF decoder
// checkpoint (safetensors, single or sharded, with config.json and
// tokenizer.json), or a slimpack artifact of one with float weights (e.g.
// pruned), written as a GGUF file that llama.cpp runs, its matrices encoded
// in the ggml types a llama-quantize preset chooses (export/gguf_types.h).
#ifndef SLIMPACK_CONVERTER_CONVERT_GGUF_H_
#define SLIMPACK_CONVERTER_CONVERT_GGUF_H_

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/convert_request.h"
#include "converter/recipe_from_artifact.h"
#include "export/gguf_llama.h"
#include "support/progress.h"

namespace slimpack::converter {

struct GgufConvertRequest {
  std::string input;
  std::string output;  // a file path
  std::string preset;  // "q4_k_m", "q8_0", "f16", ...
  // --tensor-type flags, then the recipe's rules (converter/gguf_recipe.h),
  // compiled and as written (recorded in an artifact's recipe).
  std::vector<gguf_export::TypeOverride> type_overrides;
  std::vector<std::pair<std::string, std::string>> type_rules;
  // --target-bpw (or the recipe's target_bpw): every matrix's type from the
  // size planner (export/gguf_size_plan.h) instead; 0 = none.
  double target_bpw = 0;
  // --recipe-from: the artifact's record; its calibration files must be the
  // ones given (CheckSameCalibration).
  std::optional<ArtifactRecipe> recipe_from;
  int threads = 1;
  bool force = false;
  // --allow-requantize: ggml blocks (or other codes) in the input are
  // decoded and encoded again in the requested type instead of refused.
  bool allow_requantize = false;
  bool verbose = false;
  // Importance: llama.cpp's imatrix file, or calibration windows to compute
  // ours from (at most one of them).
  std::string imatrix_path;
  std::vector<std::string> calib;
  int64_t calib_samples = 0;
  // --algo gptq: GPTQ on ggml's grids from `calib` (converter/gguf_gptq.h).
  bool gptq = false;
  // --hessians: GPTQ's statistics from `slimpack calibrate --hessians`
  // (converter/hessian_stats.h) instead of `calib`.
  std::string hessians_path;
  // --awq-inputs: AWQ's inputs from `slimpack calibrate --awq-inputs`
  // (converter/awq_input_stats.h) instead of `calib`.
  std::string awq_inputs_path;
  // --algo awq: AWQ scales searched on ggml's grids from `calib`, folded
  // into the model before the export encodes it (converter/gguf_awq.h).
  bool awq = false;
  std::function<void(const std::string&)> log;
  // Calibration runs of --algo imatrix; null: none.
  support::ProgressSink progress;
};

// From the user's flags: the preset is --quant (a llama-quantize type name)
// or --dtype (f32/f16/bf16), f16 when neither is given. Flags that do not
// apply to a GGUF export yet are refused (usage errors, IsUsageError).
absl::StatusOr<GgufConvertRequest> BuildGgufConvertRequest(const ConvertFlags& flags);

// Refuses an output that exists (unless force) or is the input, imports,
// and writes the GGUF atomically.
absl::StatusOr<gguf_export::GgufExportResult> ConvertToGguf(const GgufConvertRequest& request);

// The same encoding kept in slimpack's artifact (`convert CHECKPOINT -o DIR
// --quant q4_k_m`, no --format): the output is an artifact directory whose
// quantized tensors hold ggml's blocks (layout ggml_blocks) in HF names and
// order, beside the checkpoint's carried files (export/gguf_blocks.h).
// Exported to GGUF later, the blocks are copied as they are.
absl::StatusOr<gguf_export::GgufExportResult> ConvertToGgmlArtifact(
    const GgufConvertRequest& request);

// True when --quant names a llama-quantize preset of a quantized ggml type
// ("q4_k_m", "q8_0", ...; not the float "f16"/"f32"/"bf16", which are
// slimpack schemes too).
bool IsGgmlPresetName(const std::string& quant);

// The quantized llama-quantize type a conversion asks for: --quant, else
// the quant.scheme of --recipe or of --recipe-from's artifact; "" when it is
// none (also for a recipe that does not parse: the caller's normal path
// reports that).
std::string GgmlSchemeOf(const ConvertFlags& flags);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_CONVERT_GGUF_H_
