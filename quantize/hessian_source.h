// Precomputed GPTQ statistics: the X^T X of each linear layer's input over
// calibration rows, read from a file (`slimpack calibrate --hessians`,
// converter/hessian_stats.h) instead of captured by running the model. GPTQ
// then quantizes each weight on its own, when the shard writer writes it,
// so the parts of a split conversion share one set of statistics and each
// quantizes only its own weights.
//
// Such Hessians come from the float model's activations (no layer
// quantized), where `--algo gptq --calib` captures layer L's inputs with the
// layers before it already quantized; the two give different bytes.
#ifndef SLIMPACK_QUANTIZE_HESSIAN_SOURCE_H_
#define SLIMPACK_QUANTIZE_HESSIAN_SOURCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace slimpack::quantize {

struct LinearHessian {
  std::vector<double> xtx;  // K*K row-major: sum (or mean) of x x^T over `rows`
  uint64_t rows = 0;
};

class HessianSource {
 public:
  virtual ~HessianSource() = default;
  // The file the statistics come from, for error messages.
  virtual const std::string& file() const = 0;
  // What they were computed on, as the file records it: the calibration
  // data's base names and the samples that ran (a GGUF export's
  // quantize.imatrix.dataset / chunks_count).
  virtual const std::string& dataset() const = 0;
  virtual int64_t samples() const = 0;
  // K, the input columns of `weight`'s Hessian; nullopt when there is no
  // entry for it.
  virtual std::optional<int64_t> Columns(const std::string& weight) const = 0;
  // The Hessian of `weight`. Thread-safe. NotFound without an entry.
  virtual absl::StatusOr<LinearHessian> Read(const std::string& weight) const = 0;
};

// InvalidArgument "FILE: the Hessian of 'W' is K x K; the weight has C input
// columns" when `weight`'s entry (K = Columns(weight)) does not fit a weight
// of `cols` input columns.
inline absl::Status CheckHessianWidth(const HessianSource& h, const std::string& weight,
                                      int64_t k, int64_t cols) {
  if (k == cols) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(h.file(), ": the Hessian of '", weight, "' is ",
                                                 k, " x ", k, "; the weight has ", cols,
                                                 " input columns"));
}

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_HESSIAN_SOURCE_H_
