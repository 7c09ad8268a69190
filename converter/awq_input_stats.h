// AWQ input files: `slimpack calibrate --awq-inputs` runs the float model on
// calibration data once and stores what AWQ's scale search reads of each
// group's shared input; `convert --algo awq --awq-inputs FILE` searches and
// folds the scales from it without running the model. AWQ's inputs are the
// float model's (quantize/awq_fold.h), so the result is byte for byte
// `--algo awq --calib` on the same data and --calib-samples, and every part
// of a split conversion (docs/scale-out.md) reads one file.
//
// Layout: a safetensors file, per input (named after the weight whose
// input it is, e.g. q_proj's for q/k/v): "<weight>.mean_abs" F32 [K], the
// mean |x| per column over every calibration row, and "<weight>.rows" F32
// [kept, K], the rows the search measures error on (up to 512);
// __metadata__ "format": "slimpack-awq-inputs", "version": "1",
// "samples": the calibration samples, "dataset": the data files' base names.
// About 2 KiB per column of each input: 8 MiB for a 4096-wide one.
#ifndef SLIMPACK_CONVERTER_AWQ_INPUT_STATS_H_
#define SLIMPACK_CONVERTER_AWQ_INPUT_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "quantize/awq_fold.h"

namespace slimpack::converter {

inline constexpr char kAwqInputsFormat[] = "slimpack-awq-inputs";

struct AwqInputStatsSummary {
  size_t inputs = 0;
  int64_t samples = 0;
  uint64_t bytes = 0;  // of the file
};

// Captures the inputs of every AWQ group of `model` (an HF decoder
// checkpoint) on `data` over options.max_runs runs and writes them to
// `path` atomically; `dataset` goes to the metadata. Errors: the
// calibration's (naming the file or sample), the file's (naming `path`);
// FailedPrecondition for a model AWQ cannot fold (no known architecture).
absl::StatusOr<AwqInputStatsSummary> WriteAwqInputStats(const ir::Model& model,
                                                        const std::vector<std::string>& data,
                                                        const quantize::AwqFoldOptions& options,
                                                        const std::string& dataset,
                                                        const std::string& path);

// Reads `path` and checks it against `model`. Errors, naming the file: the
// safetensors reader's; InvalidArgument for a file of another format, a
// tensor that is not F32 "<weight>.mean_abs" [K] / "<weight>.rows"
// [kept, K] of a weight of `model`, an input with one of the two missing or
// widths that disagree, a non-finite or negative mean; Unimplemented for
// another version.
absl::StatusOr<quantize::AwqInputs> ReadAwqInputStats(const ir::Model& model,
                                                      const std::string& path);

// Whether `path` is an AWQ input file (for replacing one without --force).
bool IsAwqInputStats(const std::string& path);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_AWQ_INPUT_STATS_H_
