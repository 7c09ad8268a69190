#include "quantize/deferred_weights.h"

#include <utility>

#include "support/status_macros.h"

namespace slimpack::quantize {

DeferredWeights::DeferredWeights(const std::vector<std::string>& input_files)
    : pages_(support::InputPages::Snapshot(input_files)) {}

DeferredWeights::Job& DeferredWeights::NewJob(ir::Tensor source,
                                              std::vector<std::string> companions) {
  auto job = std::make_unique<Job>();
  job->source = std::move(source);
  Job* raw = job.get();
  by_tensor_[raw->source.name] = raw;
  for (std::string& c : companions) by_tensor_[std::move(c)] = raw;
  jobs_[raw->source.name] = std::move(job);
  return *raw;
}

void DeferredWeights::Add(ir::Tensor source, RtnTensorOptions options,
                          std::vector<float> importance, std::vector<std::string> companions) {
  Job& job = NewJob(std::move(source), std::move(companions));
  job.options = std::move(options);
  job.importance = std::move(importance);
  // Points into the job's own copy, which never moves (the job is on the heap).
  job.options.rtn.importance = job.importance.empty() ? nullptr : job.importance.data();
  job.options.release = &pages_;
}

void DeferredWeights::AddWhole(ir::Tensor source, WholeFn quantize,
                               std::vector<std::string> companions) {
  NewJob(std::move(source), std::move(companions)).whole = std::move(quantize);
}

absl::Status DeferredWeights::Quantize(Job& job) {
  ASSIGN_OR_RETURN(QuantizedWeight r, job.whole ? job.whole(job.source)
                                                : QuantizeRtnTensor(job.source, job.options));
  job.ready[r.packed.weight.name] = std::move(r.packed.weight.data);
  Keep(job, r);
  return absl::OkStatus();
}

void DeferredWeights::Keep(Job& job, QuantizedWeight& r) {
  job.ready[r.packed.scale.name] = std::move(r.packed.scale.data);
  if (r.packed.zero_point) job.ready[r.packed.zero_point->name] = std::move(r.packed.zero_point->data);
  if (job.whole || job.options.measure_error) job.error = r.error;
  // The source is read once: give its pages and the mapping's reference back.
  pages_.Release(job.source.data.data(), job.source.data.size());
  job.source.data = ir::TensorData();
}

absl::StatusOr<ir::TensorData> DeferredWeights::TakeLocked(Job& job, const std::string& tensor) {
  if (!job.done) {
    job.status = Quantize(job);
    job.done = true;
  }
  RETURN_IF_ERROR(job.status);
  auto made = job.ready.find(tensor);
  if (made == job.ready.end()) {
    return absl::InternalError("tensor '" + tensor + "' was asked for twice");
  }
  ir::TensorData bytes = std::move(made->second);
  job.ready.erase(made);
  return bytes;
}

absl::StatusOr<ir::TensorData> DeferredWeights::Produce(const std::string& tensor) {
  auto it = by_tensor_.find(tensor);
  if (it == by_tensor_.end()) {
    return absl::InternalError("tensor '" + tensor + "' is not a deferred quantized tensor");
  }
  Job& job = *it->second;
  std::lock_guard<std::mutex> lock(job.mu);
  return TakeLocked(job, tensor);
}

absl::Status DeferredWeights::ProduceStreamed(const std::string& tensor, const WeightSink& sink) {
  auto it = by_tensor_.find(tensor);
  if (it == by_tensor_.end()) {
    return absl::InternalError("tensor '" + tensor + "' is not a deferred quantized tensor");
  }
  Job& job = *it->second;
  std::lock_guard<std::mutex> lock(job.mu);
  if (job.done || tensor != job.source.name || job.whole) {
    ASSIGN_OR_RETURN(ir::TensorData bytes, TakeLocked(job, tensor));
    return sink(bytes.data(), bytes.size());
  }
  // The weight first: its blocks go straight to the sink; the scale and
  // zero point wait in `ready` for their turn.
  job.done = true;
  absl::StatusOr<QuantizedWeight> r = QuantizeRtnTensorStreamed(job.source, job.options, sink);
  job.status = r.status();
  RETURN_IF_ERROR(job.status);
  Keep(job, *r);
  return absl::OkStatus();
}

void DeferredWeights::ProduceAhead(const std::string& tensor) {
  auto it = by_tensor_.find(tensor);
  if (it == by_tensor_.end()) return;
  Job& job = *it->second;
  std::unique_lock<std::mutex> lock(job.mu, std::try_to_lock);
  if (!lock.owns_lock() || job.done) return;  // being made or made
  job.status = Quantize(job);
  job.done = true;
}

bool DeferredWeights::Written(const std::string& weight) const {
  auto it = jobs_.find(weight);
  if (it == jobs_.end()) return false;
  std::lock_guard<std::mutex> lock(it->second->mu);
  // Made means quantized (done) without an error; the lock is held while
  // a weight is made, so done is not seen before its status.
  return it->second->done && it->second->status.ok();
}

std::optional<quant::ErrorStats> DeferredWeights::Error(const std::string& weight) const {
  auto it = jobs_.find(weight);
  if (it == jobs_.end()) return std::nullopt;
  std::lock_guard<std::mutex> lock(it->second->mu);
  return it->second->error;
}

}  // namespace slimpack::quantize
