// AWQ on a Hugging Face decoder checkpoint: per decoder layer, searches
// activation-aware per-input-channel scales s for each group of linears
// that share an input, multiplies their weight columns by s and folds 1/s
// into the op producing that input, so the model computes the same
// function (up to float rounding) while the salient channels get finer
// quantization steps:
//   {q,k,v}_proj  <- input_layernorm.weight        (RMSNorm gain)
//   {gate,up}_proj <- post_attention_layernorm.weight
//   down_proj     <- up_proj rows (act(gate) * up is linear in up)
//   o_proj        <- v_proj rows (and bias), only when every query head has
//                    its own KV head; with GQA the scale would have to be
//                    shared by the query heads of a KV head, so o is left.
// The scaled weights replace the checkpoint's tensors (f32); quantizing
// them is the caller's next step.
#ifndef SLIMPACK_QUANTIZE_AWQ_FOLD_H_
#define SLIMPACK_QUANTIZE_AWQ_FOLD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/dataset.h"
#include "ir/graph.h"
#include "quantize/linear_capture.h"
#include "quantize/numerics/awq.h"
#include "quantize/quant_rules.h"
#include "quantize/value_fold.h"
#include "support/progress.h"

namespace slimpack::quantize {

struct AwqFoldOptions {
  int grid = 20;             // exponent steps in [0, 1)
  int64_t max_runs = 64;     // calibration runs
  int64_t keep_rows = 512;   // input rows the search measures error on
  int threads = 1;
  // CaptureAwqInputs' layers and runs; the search's groups (stage "awq").
  support::ProgressSink progress;
  // When not empty, the grid each weight is stored on (a GGUF export's
  // ggml types): every group's search rounds each member with its own
  // round trip (a member without one is stored unrounded, e.g. f16) and
  // `schemes` is not read.
  std::map<std::string, quant::AwqRoundTrip> round_trips;
  // One part of a split conversion (`convert --part I/N`): the tensors it
  // writes. A group none of whose tensors (members, the op its 1/s folds
  // into, that op's bias) is among them is neither captured nor searched:
  // its tensors are rewritten with unit scales, so they take the dtypes a
  // searched group's take (the part's shard plan is the whole run's) with
  // their values unchanged, and no byte this part writes reads them.
  // Unset: every group is searched.
  std::optional<std::set<std::string>> written;
  // Leave the 2-D weights the fold rescales (the members' columns, a
  // weight whose rows take 1/s) as they are and return each one's rescaling
  // in AwqFoldResult::folds, for a caller that applies it as it reads them
  // (rtn_tensor's blocks): the folded f32 copies of every layer's weights
  // are then never held. Norm gains and biases are rewritten either way.
  // The initializers change order as the eager fold leaves them.
  bool lazy = false;
};

struct AwqFoldResult {
  std::vector<std::string> log;  // one line per group: alpha, errors
  int groups = 0;                // rewritten
  int searched = 0;              // of them, searched (all unless options.written)
  // With options.lazy: by weight, what the eager fold would have applied
  // to it (its values, read through the fold, are the folded tensor's f32
  // values).
  std::map<std::string, std::shared_ptr<const ValueFold>> folds;
};

// `checkpoint` is the HF model (no nodes; tensors with roles and layers),
// whose decoder graph runs layer by layer to capture the inputs
// (CaptureAwqInputs). A group is scaled when any member is in `awq_weights`; every
// member of a scaled group is rewritten (the fold touches their shared
// input). `schemes` gives each AWQ weight's target scheme (the first
// member's scheme drives the search), unless options.round_trips gives the
// grids. FailedPrecondition for a model without a known architecture.
absl::StatusOr<AwqFoldResult> ApplyAwqScales(ir::Model& checkpoint,
                                             const std::set<std::string>& awq_weights,
                                             const std::map<std::string, WeightScheme>& schemes,
                                             calibration::Dataset& data,
                                             const AwqFoldOptions& options);

// What the search reads of a group's shared input, keyed by the member whose
// input it is: mean |x| per column and up to options.keep_rows rows of x
// (CapturedInput's mean_abs, samples, kept). The inputs are the float
// model's (the fold keeps the function, so scaling one group does not
// change what another sees), so they can be captured once and stored
// (`slimpack calibrate --awq-inputs`, converter/awq_input_stats.h).
using AwqInputs = std::map<std::string, CapturedInput>;

// The weights whose inputs the groups of `awq_weights` read (every group of
// the checkpoint when `awq_weights` holds every linear weight).
// FailedPrecondition as ApplyAwqScales.
absl::StatusOr<std::vector<std::string>> AwqInputWeights(
    const ir::Model& checkpoint, const std::set<std::string>& awq_weights);

// Runs `checkpoint`'s decoder graph on `data` one layer at a time
// (quantize/float_walk.h: one layer's weights widened at a time, not the
// model's) and captures those inputs (ApplyAwqScales' first half), only
// the searched groups' under options.written. Progress: stage
// "awq-inputs" per layer, "calibration" per run.
absl::StatusOr<AwqInputs> CaptureAwqInputs(const ir::Model& checkpoint,
                                           const std::set<std::string>& awq_weights,
                                           calibration::Dataset& data,
                                           const AwqFoldOptions& options);

// ApplyAwqScales from inputs captured before: the same scales and weights
// as ApplyAwqScales on the data they were captured from. NotFound naming
// the weight when `inputs` lacks a searched group's input; InvalidArgument
// when an input's width differs from the group's weights.
absl::StatusOr<AwqFoldResult> ApplyAwqScalesFrom(ir::Model& checkpoint,
                                                 const std::set<std::string>& awq_weights,
                                                 const std::map<std::string, WeightScheme>& schemes,
                                                 const AwqInputs& inputs,
                                                 const AwqFoldOptions& options);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_AWQ_FOLD_H_
