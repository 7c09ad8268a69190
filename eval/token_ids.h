// Token-id streams for evaluation, read from .npy files. The reading and
// range checks are calibration/token_ids.h's, shared with calibration
// datasets (convert --calib, calibrate, report), so every command accepts
// the same i32/i64 token files and refuses the same bad ids; eval names
// them here for its callers.
#ifndef SLIMPACK_EVAL_TOKEN_IDS_H_
#define SLIMPACK_EVAL_TOKEN_IDS_H_

#include "calibration/token_ids.h"

namespace slimpack::eval {

// The ids of an i32/i64 tensor of rank 1, or rank 2 with its rows
// concatenated in order (i32 widened exactly).
using calibration::TokenIdsFromTensor;
// ReadNpy + TokenIdsFromTensor.
using calibration::LoadTokenIds;
// InvalidArgument naming the first id outside [0, vocab) (or the first
// negative id when vocab <= 0, i.e. unknown): its flat index and value.
using calibration::CheckTokenIds;

}  // namespace slimpack::eval

#endif  // SLIMPACK_EVAL_TOKEN_IDS_H_
