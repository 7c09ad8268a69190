// Conversions between the interpreter's RtTensors and ir::Tensors (the form
// the .npy/.npz reader and writer use), and checking user-supplied inputs
// against a graph's declared inputs.
#ifndef SLIMPACK_EVAL_NAMED_TENSORS_H_
#define SLIMPACK_EVAL_NAMED_TENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/rt_tensor.h"
#include "ir/graph.h"

namespace slimpack::eval {

// Copies `rt` into an owned ir::Tensor named `name`.
ir::Tensor IrTensorFromRt(const std::string& name, const runtime::RtTensor& rt);

// Matches `tensors` (from `source`, e.g. an .npz path) to the graph's
// required inputs (those that are not initializers). InvalidArgument naming
// the input for: a missing input (listing the expected shape and dtype), an
// extra tensor (listing the graph's inputs), a dtype other than the
// declared one (except that an i64 input takes i32 data, widened exactly),
// a rank or static dim that differs from the declared shape, or a symbolic
// dim ("batch") bound to two different sizes. The token-ids input
// (calibration::IsTokenIdsInput) is range-checked: a negative id, or one
// >= `vocab_size` when that is > 0, is InvalidArgument naming the position
// and value; so is an empty sequence or one longer than `max_positions`
// (when > 0; calibration::CheckTokenSequenceLength).
absl::StatusOr<std::map<std::string, runtime::RtTensor>> MatchGraphInputs(
    const ir::Graph& graph, const std::vector<ir::Tensor>& tensors, const std::string& source,
    int64_t vocab_size = 0, int64_t max_positions = 0);

}  // namespace slimpack::eval

#endif  // SLIMPACK_EVAL_NAMED_TENSORS_H_
