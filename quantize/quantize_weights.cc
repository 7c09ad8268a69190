#include "quantize/quantize_weights.h"

#include "quantize/quantizer.h"
#include "support/status_macros.h"

namespace slimpack::quantize {
namespace internal {

absl::StatusOr<QuantizeResult> Quantizer::Run() {
  ASSIGN_OR_RETURN(plans_, PlanWeights(model_, req_.config));
  RETURN_IF_ERROR(TakePrecomputedImportance());
  if (req_.config.has_target()) RETURN_IF_ERROR(PlanSizes());
  RETURN_IF_ERROR(PrepareCalibration());
  // Each source weight is read once more below and then replaced: its
  // pages of the mapped checkpoint are dropped right after, so resident
  // memory holds the quantized tensors, not the whole input as well.
  pages_ = support::InputPages::Snapshot(model_.input_files);
  const support::InputPages& pages = pages_;
  for (size_t i = 0; i < plans_.size(); ++i) {
    const ir::Tensor* source = model_.graph.FindInitializer(plans_[i].use.tensor);
    const ir::TensorData source_data = source ? source->data : ir::TensorData();
    RETURN_IF_ERROR(Store(i));
    if (plans_[i].scheme.kind != WeightScheme::Kind::kKeep) {
      pages.Release(source_data.data(), source_data.size());
    }
  }
  return std::move(result_);
}

}  // namespace internal

absl::StatusOr<QuantizeResult> QuantizeWeights(ir::Model& model,
                                               const QuantizeRequest& request) {
  return internal::Quantizer(model, request).Run();
}

}  // namespace slimpack::quantize
