// Input checking happens before the interpreter runs, so the error names the
// user's input and the declared shape rather than a kernel deep inside.
#include "eval/named_tensors.h"

#include <cstring>

#include "calibration/token_ids.h"
#include "support/status_macros.h"

namespace slimpack::eval {
namespace {

std::string Describe(const ir::ValueInfo& v) {
  return std::string(ir::DTypeName(v.dtype)) + v.shape.ToString();
}

}  // namespace

ir::Tensor IrTensorFromRt(const std::string& name, const runtime::RtTensor& rt) {
  ir::Tensor t;
  t.name = name;
  t.dtype = rt.dtype();
  t.dims = rt.dims();
  std::vector<uint8_t> bytes(rt.byte_size());
  if (!bytes.empty()) std::memcpy(bytes.data(), rt.raw(), bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

absl::StatusOr<std::map<std::string, runtime::RtTensor>> MatchGraphInputs(
    const ir::Graph& graph, const std::vector<ir::Tensor>& tensors, const std::string& source,
    int64_t vocab_size, int64_t max_positions) {
  std::map<std::string, const ir::Tensor*> given;
  for (const ir::Tensor& t : tensors) given[t.name] = &t;
  std::vector<const ir::ValueInfo*> required;
  std::string expected_list;
  for (const ir::ValueInfo& in : graph.inputs) {
    if (graph.FindInitializer(in.name) != nullptr) continue;
    required.push_back(&in);
    expected_list += (expected_list.empty() ? "" : ", ") + in.name + " " + Describe(in);
  }
  for (const auto& [name, t] : given) {
    bool known = false;
    for (const ir::ValueInfo* in : required) known |= in->name == name;
    if (!known) {
      return absl::InvalidArgumentError(source + ": '" + name +
                                        "' is not a graph input (inputs: " + expected_list + ")");
    }
  }
  std::map<std::string, int64_t> symbols;
  std::map<std::string, runtime::RtTensor> out;
  for (const ir::ValueInfo* in : required) {
    auto it = given.find(in->name);
    if (it == given.end()) {
      return absl::InvalidArgumentError(source + ": missing input '" + in->name +
                                        "', expected " + Describe(*in));
    }
    const ir::Tensor& t = *it->second;
    const std::string found = std::string(ir::DTypeName(t.dtype)) +
                              ir::Shape::FromDims(t.dims).ToString();
    auto mismatch = [&](const std::string& what) {
      return absl::InvalidArgumentError(source + ": input '" + in->name + "' is " + found +
                                        ", expected " + Describe(*in) + " (" + what + ")");
    };
    // i32 -> i64 is exact, so an i64 input takes i32 data (token ids are
    // often saved as int32), as calibration datasets do.
    const bool widen = t.dtype == ir::DType::kI32 && in->dtype == ir::DType::kI64;
    if (in->dtype != ir::DType::kUndefined && t.dtype != in->dtype && !widen) {
      return mismatch("dtype");
    }
    if (in->shape.rank_known()) {
      if (in->shape.rank() != t.dims.size()) return mismatch("rank");
      for (size_t i = 0; i < t.dims.size(); ++i) {
        const ir::Dim& d = in->shape.dim(i);
        if (d.is_static() && d.value != t.dims[i]) {
          return mismatch("dim " + std::to_string(i));
        }
        if (!d.is_static() && !d.symbol.empty()) {
          auto [pos, inserted] = symbols.emplace(d.symbol, t.dims[i]);
          if (!inserted && pos->second != t.dims[i]) {
            return mismatch("'" + d.symbol + "' is " + std::to_string(pos->second) +
                            " in another input");
          }
        }
      }
    }
    const std::string what = source + ": input '" + in->name + "'";
    const ir::Tensor* feed = &t;
    ir::Tensor widened;
    if (widen) {
      ASSIGN_OR_RETURN(widened, calibration::WidenToI64(t, what));
      feed = &widened;
    }
    if (calibration::IsTokenIdsInput(*in)) {
      RETURN_IF_ERROR(calibration::CheckTokenTensor(*feed, vocab_size, what));
      RETURN_IF_ERROR(calibration::CheckTokenSequenceLength(*feed, max_positions, what));
    }
    ASSIGN_OR_RETURN(runtime::RtTensor rt, runtime::RtTensor::FromIrKeepingDType(*feed));
    out[in->name] = std::move(rt);
  }
  return out;
}

}  // namespace slimpack::eval
