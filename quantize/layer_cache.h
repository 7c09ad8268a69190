// The values one weight group's calibration runs start from (quantize/
// layer_cut.h says which), computed per run by advancing the previous
// group's values through the model with that group already quantized.
#ifndef SLIMPACK_QUANTIZE_LAYER_CACHE_H_
#define SLIMPACK_QUANTIZE_LAYER_CACHE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/dataset.h"
#include "ir/graph.h"
#include "runtime/rt_tensor.h"

namespace slimpack::quantize {

// Per calibration run i, the cached values by name.
using RunValues = std::vector<std::map<std::string, runtime::RtTensor>>;

// Runs the part of `model` that computes `next` from the values `cached`
// holds under the names `cached_names` (and each run's sample inputs), on
// the first cached.size() runs of `data`, and returns `next` per run.
// nullopt when the values would exceed `max_bytes` (the caller then runs
// from the model inputs). Run errors name the sample; InvalidArgument when
// the data ends before cached.size() runs.
absl::StatusOr<std::optional<RunValues>> AdvanceCachedValues(
    ir::Model model, const RunValues& cached, const std::vector<std::string>& cached_names,
    const std::vector<std::string>& next, calibration::Dataset& data, int threads,
    uint64_t max_bytes);

// Samples `data` yields, up to `max_runs` (reads them; cheap next to a run).
absl::StatusOr<int64_t> CountRuns(calibration::Dataset& data, int64_t max_runs);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_LAYER_CACHE_H_
