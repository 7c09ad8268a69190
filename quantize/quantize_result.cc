// QuantizeWeights' results: the manifest record, the -v lines, and the
// errors of weights quantized only when they were written.
#include "quantize/quantize_weights.h"

#include "absl/strings/str_cat.h"
#include "quantize/deferred_weights.h"

namespace slimpack::quantize {

using nlohmann::json;

std::string TensorRecord::Line() const {
  return absl::StrCat("quantize: ", tensor, " [", op, "] ", scheme,
                      algorithm.empty() ? "" : " " + algorithm, ": ", bytes_before,
                      " -> ", bytes_after, " bytes, rel L2 ", relative_l2,
                      note.empty() ? "" : " (" + note + ")");
}

json QuantizeResult::ToJson() const {
  json tensors_json = json::array();
  for (const TensorRecord& r : tensors) {
    json o = {{"tensor", r.tensor}, {"op", r.op}, {"scheme", r.scheme},
              {"bytes_before", r.bytes_before}, {"bytes_after", r.bytes_after}};
    if (!r.algorithm.empty()) o["algorithm"] = r.algorithm;
    if (r.rule >= 0) o["rule"] = r.rule;
    if (!r.note.empty()) o["note"] = r.note;
    tensors_json.push_back(std::move(o));
  }
  json out = {{"tensors", std::move(tensors_json)},
              {"bytes_before", bytes_before},
              {"bytes_after", bytes_after}};
  if (plan) {
    out["plan"] = {{"planned_bytes", plan->planned_bytes}, {"other_bytes", plan->other_bytes},
                   {"budget", plan->budget}, {"parameters", plan->parameters}};
  }
  return out;
}

absl::Status FinishDeferred(QuantizeResult& result,
                            const std::function<void(const std::string&)>& log,
                            bool all_written) {
  if (!result.deferred) return absl::OkStatus();
  for (TensorRecord& rec : result.tensors) {
    if (!result.deferred->Holds(rec.tensor)) continue;
    if (!result.deferred->Written(rec.tensor)) {
      if (!all_written) continue;
      return absl::InternalError("quantize: tensor '" + rec.tensor +
                                 "' was deferred to the writer but never written");
    }
    // Not measured when nothing prints it (QuantizeRequest::log unset).
    const std::optional<quant::ErrorStats> e = result.deferred->Error(rec.tensor);
    if (!e) continue;
    rec.relative_l2 = e->relative_l2();
    rec.sqnr_db = e->sqnr_db();
    if (log) log(rec.Line());
  }
  return absl::OkStatus();
}

}  // namespace slimpack::quantize
