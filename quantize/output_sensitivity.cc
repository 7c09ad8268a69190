#include "quantize/output_sensitivity.h"

#include <optional>

#include "quantize/weight_matrix.h"
#include "support/status_macros.h"

namespace slimpack::quantize {
namespace {

std::vector<float> FloatOutputs(const std::vector<runtime::RtTensor>& outs) {
  std::vector<float> v;
  for (const auto& t : outs) {
    if (t.dtype() != ir::DType::kF32) continue;
    const float* p = reinterpret_cast<const float*>(t.raw());
    v.insert(v.end(), p, p + t.num_elements());
  }
  return v;
}

}  // namespace

absl::StatusOr<runtime::Interpreter> OutputSensitivity::MakeInterpreter(const ir::Model& m) const {
  runtime::InterpreterOptions io;
  io.num_threads = threads_;
  return runtime::Interpreter::Create(m, io);
}

absl::StatusOr<OutputSensitivity> OutputSensitivity::Measure(ir::Model runnable,
                                                             calibration::Dataset& data,
                                                             int threads) {
  OutputSensitivity s(std::move(runnable), threads);
  ASSIGN_OR_RETURN(runtime::Interpreter interp, s.MakeInterpreter(s.model_));
  data.Rewind();
  for (int i = 0; i < kRuns; ++i) {
    ASSIGN_OR_RETURN(std::optional<calibration::Sample> sample, data.Next());
    if (!sample) break;
    ASSIGN_OR_RETURN(std::vector<runtime::RtTensor> outs, interp.Run(sample->inputs));
    s.inputs_.push_back(std::move(sample->inputs));
    s.reference_.push_back(FloatOutputs(outs));
  }
  return s;
}

absl::StatusOr<double> OutputSensitivity::OutputError(const WeightUse& use,
                                                      const std::vector<float>& values) const {
  ir::Model m = model_;
  const ir::Tensor* t = m.graph.FindInitializer(use.tensor);
  if (t == nullptr) return absl::NotFoundError("no tensor '" + use.tensor + "' in the run graph");
  RETURN_IF_ERROR(ReplaceInitializer(m.graph, F32Like(*t, values)));
  ASSIGN_OR_RETURN(runtime::Interpreter interp, MakeInterpreter(m));
  double se = 0;
  uint64_t n = 0;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    ASSIGN_OR_RETURN(std::vector<runtime::RtTensor> outs, interp.Run(inputs_[i]));
    const std::vector<float> got = FloatOutputs(outs);
    const std::vector<float>& want = reference_[i];
    for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
      const double d = static_cast<double>(got[k]) - want[k];
      se += d * d;
    }
    n += got.size();
  }
  return n == 0 ? 0.0 : se / static_cast<double>(n);
}

}  // namespace slimpack::quantize
