#include "quantize/layer_cache.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "ir/graph_slice.h"
#include "runtime/interpreter.h"
#include "support/status_macros.h"

namespace slimpack::quantize {

absl::StatusOr<std::optional<RunValues>> AdvanceCachedValues(
    ir::Model model, const RunValues& cached, const std::vector<std::string>& cached_names,
    const std::vector<std::string>& next, calibration::Dataset& data, int threads,
    uint64_t max_bytes) {
  const std::set<std::string> given(cached_names.begin(), cached_names.end());
  ASSIGN_OR_RETURN(ir::Graph slice, ir::SliceGraph(model.graph, next, given));
  model.graph = std::move(slice);
  runtime::InterpreterOptions options;
  options.num_threads = threads;
  ASSIGN_OR_RETURN(runtime::Interpreter interp, runtime::Interpreter::Create(model, options));
  RunValues out;
  out.reserve(cached.size());
  uint64_t bytes = 0;
  data.Rewind();
  for (size_t i = 0; i < cached.size(); ++i) {
    ASSIGN_OR_RETURN(std::optional<calibration::Sample> sample, data.Next());
    if (!sample) {
      return absl::InvalidArgumentError(absl::StrCat(
          "calibration data ended after ", i, " runs; ", cached.size(), " were cached"));
    }
    std::map<std::string, runtime::RtTensor> inputs;
    for (const std::string& name : interp.input_names()) {
      if (auto it = cached[i].find(name); it != cached[i].end()) {
        inputs.emplace(name, it->second);
      } else if (auto s = sample->inputs.find(name); s != sample->inputs.end()) {
        inputs.emplace(name, s->second);
      }
    }
    auto outs = interp.Run(inputs);
    if (!outs.ok()) return Annotate(outs.status(), "calibration sample " + sample->source);
    std::map<std::string, runtime::RtTensor>& values = out.emplace_back();
    for (size_t k = 0; k < next.size(); ++k) {
      bytes += (*outs)[k].byte_size();
      values.emplace(next[k], std::move((*outs)[k]));
    }
    if (bytes > max_bytes) return std::optional<RunValues>();
  }
  return std::optional<RunValues>(std::move(out));
}

absl::StatusOr<int64_t> CountRuns(calibration::Dataset& data, int64_t max_runs) {
  data.Rewind();
  int64_t runs = 0;
  while (runs < max_runs) {
    ASSIGN_OR_RETURN(std::optional<calibration::Sample> sample, data.Next());
    if (!sample) break;
    ++runs;
  }
  data.Rewind();
  return runs;
}

}  // namespace slimpack::quantize
