// Quantizer's store side (quantize/quantizer.h): each weight replaced by its
// quantized tensors, made now or deferred to the shard writer.
#include <string>
#include <vector>

#include "ir/float_convert.h"
#include "quantize/deferred_weights.h"
#include "quantize/hessian_source.h"
#include "quantize/numerics/error_stats.h"
#include "quantize/numerics/rtn.h"
#include "quantize/quantizer.h"
#include "quantize/weight_matrix.h"
#include "support/status_macros.h"

namespace slimpack::quantize::internal {
namespace {

uint64_t BytesOf(const ir::Tensor& t) { return t.data.size(); }

// GPTQ of weight `t` from its precomputed Hessian, stored as Store stores
// the walk's results.
absl::StatusOr<QuantizedWeight> GptqFromHessian(const ir::Tensor& t, bool transposed,
                                                const quant::Scheme& scheme,
                                                const quant::GptqOptions& options,
                                                const HessianSource& hessians) {
  ASSIGN_OR_RETURN(Matrix m, AsMatrix(t, transposed));
  auto h = hessians.Read(t.name);
  if (!h.ok()) return Annotate(h.status(), hessians.file());
  auto q = quant::QuantizeGptq(m.w.data(), m.rows, m.cols, scheme, h->xtx, h->rows, options);
  if (!q.ok()) {
    return Annotate(q.status(), "gptq of tensor '" + t.name + "' (Hessian from " +
                                    hessians.file() + ")");
  }
  std::vector<float> deq(m.w.size());
  quant::Dequantize(*q, deq.data());
  return StoredWeight(*q, m.w, deq, t, transposed, std::string(AlgorithmName(Algorithm::kGptq)));
}

}  // namespace

absl::Status Quantizer::Store(size_t i) {
  const TensorPlan& p = plans_[i];
  const ir::Tensor original = *model_.graph.FindInitializer(p.use.tensor);
  TensorRecord rec;
  rec.tensor = p.use.tensor;
  rec.op = p.use.op;
  rec.scheme = p.scheme.Name();
  rec.rule = p.rule;
  rec.note = p.note;
  rec.bytes_before = BytesOf(original);
  if (auto fold = folds_.find(p.use.tensor); fold != folds_.end()) {
    // AWQ's rescaling applied as it is read: the weight it quantizes is the
    // folded one, f32 (as the eager fold stores it).
    ASSIGN_OR_RETURN(const uint64_t numel, original.NumElements());
    rec.bytes_before = numel * sizeof(float);
  }
  if (p.scheme.kind == WeightScheme::Kind::kKeep) {
    rec.bytes_after = rec.bytes_before;
    return Record(std::move(rec));
  }
  if (p.scheme.kind == WeightScheme::Kind::kFloat) return StoreFloat(p, original, std::move(rec));
  rec.algorithm = std::string(AlgorithmName(p.algorithm));
  quant::PackedTensors packed;
  quant::ErrorStats error;
  if (auto it = gptq_.find(p.use.tensor); it != gptq_.end()) {
    packed = std::move(it->second.packed);
    error = it->second.error;
    gptq_.erase(it);
  } else if (p.algorithm == Algorithm::kGptq && req_.hessians) {
    if (req_.defer_rtn) return DeferGptq(p, original, std::move(rec));
    ASSIGN_OR_RETURN(QuantizedWeight r,
                     GptqFromHessian(original, p.use.transposed, p.scheme.Numerics(),
                                     GptqOptionsOf(), *req_.hessians));
    packed = std::move(r.packed);
    error = r.error;
  } else if (req_.defer_rtn) {
    return Defer(p, original, std::move(rec));
  } else {
    ASSIGN_OR_RETURN(QuantizedWeight r,
                     QuantizeRtnTensor(original, RtnOptionsFor(p, rec.algorithm)));
    packed = std::move(r.packed);
    error = r.error;
  }
  rec.relative_l2 = error.relative_l2();
  rec.sqnr_db = error.sqnr_db();
  return Install(std::move(packed), std::move(rec));
}

absl::Status Quantizer::Install(quant::PackedTensors packed, TensorRecord rec) {
  rec.bytes_after = BytesOf(packed.weight) + BytesOf(packed.scale) +
                    (packed.zero_point ? BytesOf(*packed.zero_point) : 0);
  RETURN_IF_ERROR(ReplaceInitializer(model_.graph, std::move(packed.weight)));
  RETURN_IF_ERROR(model_.graph.AddInitializer(std::move(packed.scale)));
  if (packed.zero_point) {
    RETURN_IF_ERROR(model_.graph.AddInitializer(std::move(*packed.zero_point)));
  }
  return Record(std::move(rec));
}

absl::Status Quantizer::Defer(const TensorPlan& p, const ir::Tensor& original,
                              TensorRecord rec) {
  RtnTensorOptions o = RtnOptionsFor(p, rec.algorithm);
  if (auto fold = folds_.find(p.use.tensor); fold != folds_.end()) o.fold = fold->second;
  // The artifact writer makes deferred weights on its own threads (each
  // shard's writer, and threads with no file left working one weight
  // ahead): rtn_tensor.h's blocks_on_caller_thread says what that costs.
  o.blocks_on_caller_thread = true;
  // A deferred weight's error is only ever printed (by -v, through log).
  o.measure_error = static_cast<bool>(req_.log);
  ASSIGN_OR_RETURN(auto shape, MatrixShape(original, p.use.transposed));
  ASSIGN_OR_RETURN(quant::PackedTensors packed,
                   quant::PackedShapes(o.scheme, shape.first, shape.second, original,
                                       p.use.transposed, rec.algorithm));
  std::vector<float> importance;
  if (o.rtn.importance) importance.assign(o.rtn.importance, o.rtn.importance + shape.second);
  std::vector<std::string> companions = {packed.scale.name};
  if (packed.zero_point) companions.push_back(packed.zero_point->name);
  if (!result_.deferred) result_.deferred = std::make_shared<DeferredWeights>(model_.input_files);
  result_.deferred->Add(original, std::move(o), std::move(importance), std::move(companions));
  return Install(std::move(packed), std::move(rec));
}

absl::Status Quantizer::DeferGptq(const TensorPlan& p, const ir::Tensor& original,
                                  TensorRecord rec) {
  const quant::Scheme scheme = p.scheme.Numerics();
  ASSIGN_OR_RETURN(auto shape, MatrixShape(original, p.use.transposed));
  ASSIGN_OR_RETURN(quant::PackedTensors packed,
                   quant::PackedShapes(scheme, shape.first, shape.second, original,
                                       p.use.transposed, rec.algorithm));
  std::vector<std::string> companions = {packed.scale.name};
  if (packed.zero_point) companions.push_back(packed.zero_point->name);
  if (!result_.deferred) result_.deferred = std::make_shared<DeferredWeights>(model_.input_files);
  result_.deferred->AddWhole(
      original,
      [transposed = p.use.transposed, scheme, go = GptqOptionsOf(),
       hessians = req_.hessians](const ir::Tensor& source) {
        return GptqFromHessian(source, transposed, scheme, go, *hessians);
      },
      std::move(companions));
  return Install(std::move(packed), std::move(rec));
}

RtnTensorOptions Quantizer::RtnOptionsFor(const TensorPlan& p,
                                          const std::string& algorithm) const {
  RtnTensorOptions o;
  o.scheme = p.scheme.Numerics();
  o.transposed = p.use.transposed;
  o.algorithm = algorithm;
  o.rtn.threads = req_.threads;
  o.release = &pages_;
  o.rtn.mse_clip = p.algorithm == Algorithm::kRtnMse || req_.config.mse_clip;
  auto imp = importance_.find(p.use.tensor);
  if (imp != importance_.end()) o.rtn.importance = imp->second.data();
  return o;
}

absl::Status Quantizer::StoreFloat(const TensorPlan& p, const ir::Tensor& original,
                                   TensorRecord rec) {
  if (original.dtype == p.scheme.float_dtype) {
    // Already in that dtype (`--quant f16` on an F16 checkpoint or GGUF):
    // the round trip is exact, so the tensor, a view of the input file,
    // stays as it is, with the record the round trip would give.
    // Decoding and re-encoding it took 9.6 s and 627 MiB instead of 0.8 s
    // and 151 MiB on a 413 MB F16 GGUF.
    const quant::ErrorStats exact;
    rec.relative_l2 = exact.relative_l2();
    rec.sqnr_db = exact.sqnr_db();
    rec.bytes_after = original.data.size();
    return Record(std::move(rec));
  }
  ASSIGN_OR_RETURN(Matrix m, AsMatrix(original, p.use.transposed));
  ir::Tensor t = original;
  t.dtype = p.scheme.float_dtype;
  std::vector<uint8_t> bytes(m.w.size() * (ir::DTypeBits(t.dtype) / 8));
  std::vector<float> ordered = InTensorOrder(m.w, m.rows, m.cols, p.use.transposed);
  RETURN_IF_ERROR(ir::ConvertFloats(
      ir::DType::kF32, reinterpret_cast<const uint8_t*>(ordered.data()), t.dtype,
      bytes.data(), ordered.size()));
  t.data = ir::TensorData::Owned(std::move(bytes));
  ASSIGN_OR_RETURN(Matrix back, AsMatrix(t, p.use.transposed));
  const quant::ErrorStats e = quant::CompareArrays(m.w.data(), back.w.data(), m.w.size());
  rec.relative_l2 = e.relative_l2();
  rec.sqnr_db = e.sqnr_db();
  rec.bytes_after = t.data.size();
  RETURN_IF_ERROR(ReplaceInitializer(model_.graph, std::move(t)));
  return Record(std::move(rec));
}

absl::Status Quantizer::Record(TensorRecord rec) {
  if (!result_.deferred || !result_.deferred->Holds(rec.tensor)) LogRecord(rec);
  result_.bytes_before += rec.bytes_before;
  result_.bytes_after += rec.bytes_after;
  result_.tensors.push_back(std::move(rec));
  return absl::OkStatus();
}

}  // namespace slimpack::quantize::internal
