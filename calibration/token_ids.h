// Token ids read from files: i32 or i64 arrays as int64 (i32 widened
// exactly) and range-checked where they are read. The checks live with the
// readers, not in the interpreter: Gather wraps a negative index as ONNX
// specifies, so a -7 in a data file would silently become id vocab-7, and
// only the reader knows the file and position to blame. `eval`, `run`,
// calibration datasets (convert's --calib, `calibrate`, `report`) all use
// these functions, so every command accepts the same token files.
#ifndef SLIMPACK_CALIBRATION_TOKEN_IDS_H_
#define SLIMPACK_CALIBRATION_TOKEN_IDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace slimpack::calibration {

// True for the graph input that carries token ids: an i32/i64 input named
// input_ids (hf::kInputIds: the HF decoder graph's input, and the name HF's
// ONNX exports use). Only such inputs are range-checked when fed from array
// files; other integer inputs (masks, offsets, class ids) may hold any value.
bool IsTokenIdsInput(const ir::ValueInfo& input);

// The elements of an i32 or i64 tensor as int64 in C order (i32 widened
// exactly). Unimplemented naming `source` and the dtype for other dtypes;
// InvalidArgument when the byte count does not match dtype x dims.
absl::StatusOr<std::vector<int64_t>> IntegerValues(const ir::Tensor& tensor,
                                                   const std::string& source);

// `tensor` with dtype i64: an i32 tensor is widened exactly into owned
// bytes (name, dims and the other fields kept); an i64 one is returned as
// is. Errors as IntegerValues.
absl::StatusOr<ir::Tensor> WidenToI64(const ir::Tensor& tensor, const std::string& source);

// The ids of an i32/i64 tensor of rank 1, or rank 2 with its rows
// concatenated in order. Unimplemented naming the dtype otherwise;
// InvalidArgument for another rank. `source` prefixes errors.
absl::StatusOr<std::vector<int64_t>> TokenIdsFromTensor(const ir::Tensor& tensor,
                                                        const std::string& source);

// ReadNpy + TokenIdsFromTensor.
absl::StatusOr<std::vector<int64_t>> LoadTokenIds(const std::string& npy_path);

// OK when every id is in [0, vocab), or merely >= 0 when vocab <= 0 (the
// vocabulary size is unknown at the read site). Otherwise InvalidArgument
// naming `source`, the first bad id's flat index and its value (and the
// vocabulary when known).
absl::Status CheckTokenIds(const std::vector<int64_t>& ids, int64_t vocab,
                           const std::string& source);

// The same check over the elements of an i32/i64 tensor, naming the bad
// id's position as an index into the tensor's dims ("[1, 3]" for rank >= 2,
// "index 5" for rank <= 1), so it matches what the user sees in NumPy.
absl::Status CheckTokenTensor(const ir::Tensor& tensor, int64_t vocab,
                              const std::string& source);

// The model's vocabulary size from config.json, or 0 when it has none
// (ONNX models): the bound the checks above take.
// config.json's max_position_embeddings when the model has one, else 0.
int64_t KnownMaxPositions(const ir::Model& model);

// OK when the last axis of a token-ids tensor (its sequence length) is in
// [1, max_positions] (only >= 1 when max_positions <= 0: unknown). An empty
// sequence would fail deep inside the graph (a Reshape of [0, hidden]); one
// beyond the model's context would either exhaust memory in the L x L
// causal mask or score positions the model never saw. InvalidArgument
// naming `source`, the length and the limit.
absl::Status CheckTokenSequenceLength(const ir::Tensor& tensor, int64_t max_positions,
                                      const std::string& source);

int64_t KnownVocabSize(const ir::Model& model);

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_TOKEN_IDS_H_
