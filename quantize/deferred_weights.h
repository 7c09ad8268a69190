// Weights whose quantization waits until the shard writer writes them
// (QuantizeRequest::defer_rtn): the model holds placeholders of the final
// dtype, shape and layout (ir::TensorData::Deferred), and each weight is
// quantized from its source tensor when the writer first asks for it or its
// scale / zero point. A conversion then holds one weight's packed bytes per
// writer thread instead of every quantized tensor until the end, and the
// source's mapped pages are given back as each weight is done. The bytes
// are those of quantizing in QuantizeWeights (the same QuantizeRtnTensor).
#ifndef SLIMPACK_QUANTIZE_DEFERRED_WEIGHTS_H_
#define SLIMPACK_QUANTIZE_DEFERRED_WEIGHTS_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "quantize/numerics/error_stats.h"
#include "quantize/rtn_tensor.h"
#include "support/input_pages.h"

namespace slimpack::quantize {

class DeferredWeights {
 public:
  // `input_files`: the model's mapped inputs (ir::Model::input_files),
  // whose pages each weight gives back once quantized.
  explicit DeferredWeights(const std::vector<std::string>& input_files);

  // Registers weight `source` (its float tensor, kept alive here) to be
  // quantized with `options`; `importance` (empty, or one float per input
  // column) is copied. `companions` are the names of its scale and zero
  // point. Not thread-safe: every Add comes before the first Produce.
  void Add(ir::Tensor source, RtnTensorOptions options, std::vector<float> importance,
           std::vector<std::string> companions);

  // A weight quantized whole by `quantize` (GPTQ from precomputed
  // statistics) on the first request of it or a companion; its bytes are
  // handed over whole, never streamed. Not thread-safe, as Add.
  using WholeFn = std::function<absl::StatusOr<QuantizedWeight>(const ir::Tensor& source)>;
  void AddWhole(ir::Tensor source, WholeFn quantize, std::vector<std::string> companions);

  bool Holds(const std::string& tensor) const { return by_tensor_.count(tensor) != 0; }
  // How many weights were registered.
  size_t weights() const { return jobs_.size(); }

  // The bytes of deferred tensor `tensor` (a weight, its scale or its zero
  // point), quantizing the weight on the first request of any of them.
  // Thread-safe; each tensor may be asked for once. Errors: the quantizer's
  // (naming the tensor), Internal for an unknown or repeated name.
  absl::StatusOr<ir::TensorData> Produce(const std::string& tensor);

  // Produce's bytes handed to `sink` in order. Asked for a weight before its
  // scale and zero point (the shard writer's order), the weight's packed
  // blocks go to the sink as they are quantized and are never gathered;
  // otherwise Produce's bytes are handed over whole. Errors as Produce's,
  // and the sink's own.
  absl::Status ProduceStreamed(const std::string& tensor, const WeightSink& sink);

  // Quantizes the weight of deferred tensor `tensor` (it or a companion)
  // now, unless it is done or being done, and keeps its bytes for Produce /
  // ProduceStreamed, which hand them over whole: the shard writer's idle
  // threads work ahead of a busy one. Errors wait for that request.
  void ProduceAhead(const std::string& tensor);

  // Whether a weight was produced (quantized without an error).
  bool Written(const std::string& weight) const;
  // The error of a weight once produced; nullopt before, or when its
  // options did not measure it (RtnTensorOptions::measure_error).
  std::optional<quant::ErrorStats> Error(const std::string& weight) const;

 private:
  struct Job {
    ir::Tensor source;
    RtnTensorOptions options;
    std::vector<float> importance;
    WholeFn whole;  // set: quantized by it instead of RTN
    std::mutex mu;
    bool done = false;
    absl::Status status;
    std::map<std::string, ir::TensorData> ready;  // made, not yet handed out
    std::optional<quant::ErrorStats> error;
  };
  Job& NewJob(ir::Tensor source, std::vector<std::string> companions);
  absl::Status Quantize(Job& job);
  // Keeps a quantized weight's scale, zero point and error in its job and
  // gives the source's pages back (the weight's own bytes are the caller's).
  void Keep(Job& job, QuantizedWeight& r);
  // The buffered bytes of `tensor` from its (locked) job, quantizing first.
  absl::StatusOr<ir::TensorData> TakeLocked(Job& job, const std::string& tensor);

  std::map<std::string, std::unique_ptr<Job>> jobs_;  // by weight name
  std::map<std::string, Job*> by_tensor_;             // weight and companions
  support::InputPages pages_;
};

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_DEFERRED_WEIGHTS_H_
