// GPTQ Hessian files: `slimpack calibrate --hessians` runs the float model
// on calibration data once and stores every linear layer's input statistics;
// `convert --algo gptq --hessians FILE` quantizes from them without running
// the model, each weight when its shard is written, so every part of a split
// conversion (docs/scale-out.md) reads the same statistics and quantizes only
// its own weights.
//
// Layout: a safetensors file (readable by any safetensors reader), one F32
// [K, K] tensor per linear layer, named as its weight in the model, holding
// the mean of x x^T over the calibration rows (X^T X / rows: GPTQ's result
// does not depend on the Hessian's scale); __metadata__ "format":
// "slimpack-hessians", "version": "1", "samples": the calibration samples,
// "dataset": the data files' base names. A 4096-wide layer takes 64 MiB.
#ifndef SLIMPACK_CONVERTER_HESSIAN_STATS_H_
#define SLIMPACK_CONVERTER_HESSIAN_STATS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "quantize/float_hessians.h"
#include "quantize/hessian_source.h"

namespace slimpack::converter {

inline constexpr char kHessianFormat[] = "slimpack-hessians";

struct HessianStatsSummary {
  size_t entries = 0;
  int64_t samples = 0;
  uint64_t bytes = 0;  // of the file
};

// Computes the Hessians of `model`'s linear layers on `data`
// (quantize::ComputeFloatHessians) and writes them to `path` atomically,
// each as soon as its layer group is captured (one group held at a time).
// `dataset` goes to the metadata. Errors: the calibration's, the file's
// (naming `path`); nothing is left at `path` on error.
absl::StatusOr<HessianStatsSummary> WriteHessianStats(const ir::Model& model,
                                                      const std::vector<std::string>& data,
                                                      const quantize::FloatHessianOptions& options,
                                                      const std::string& dataset,
                                                      const std::string& path);

// Maps `path` and checks it against `model`. Errors, naming the file:
// the safetensors reader's; InvalidArgument for a file of another format
// (no "slimpack-hessians" metadata), a tensor that is not F32 [K, K], or
// one that names no weight of `model`; Unimplemented for another version.
absl::StatusOr<std::shared_ptr<const quantize::HessianSource>> OpenHessianStats(
    const ir::Model& model, const std::string& path);

// Whether `path` is a Hessian file (for replacing one without --force).
bool IsHessianStats(const std::string& path);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_HESSIAN_STATS_H_
