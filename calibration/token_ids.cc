// Token-id reading and range checks (see token_ids.h for why they live at
// the read site). Elements are read with memcpy: safetensors payloads need
// not be 8-byte aligned.
#include "calibration/token_ids.h"

#include <cstring>

#include "calibration/array_position.h"
#include "formats/numpy/numpy_io.h"
#include "hf/llama_graph_builder.h"
#include "ir/shape.h"
#include "support/status_macros.h"

namespace slimpack::calibration {
namespace {

absl::Status CheckIntegerTensor(const ir::Tensor& t, const std::string& source) {
  if (t.dtype != ir::DType::kI64 && t.dtype != ir::DType::kI32) {
    return absl::UnimplementedError(source + ": token ids have dtype " +
                                    std::string(ir::DTypeName(t.dtype)) +
                                    " (supported: i32, i64)");
  }
  ASSIGN_OR_RETURN(uint64_t bytes, t.ExpectedBytes());
  if (bytes != t.data.size()) {
    return absl::InvalidArgumentError(source + ": token tensor holds " +
                                      std::to_string(t.data.size()) + " bytes, expected " +
                                      std::to_string(bytes));
  }
  return absl::OkStatus();
}


bool Valid(int64_t id, int64_t vocab) { return id >= 0 && (vocab <= 0 || id < vocab); }

absl::Status BadId(const std::string& source, const std::string& position, int64_t id,
                   int64_t vocab) {
  if (vocab > 0) {
    return absl::InvalidArgumentError(source + ": token id at " + position + " is " +
                                      std::to_string(id) + ", outside the vocabulary [0, " +
                                      std::to_string(vocab) + ")");
  }
  return absl::InvalidArgumentError(source + ": token id at " + position + " is " +
                                    std::to_string(id) +
                                    ", but token ids must be >= 0 (a negative id would wrap "
                                    "around in the embedding lookup)");
}

}  // namespace

bool IsTokenIdsInput(const ir::ValueInfo& input) {
  return input.name == hf::kInputIds &&
         (input.dtype == ir::DType::kI64 || input.dtype == ir::DType::kI32);
}

absl::StatusOr<std::vector<int64_t>> IntegerValues(const ir::Tensor& t,
                                                   const std::string& source) {
  RETURN_IF_ERROR(CheckIntegerTensor(t, source));
  ASSIGN_OR_RETURN(uint64_t n, t.NumElements());
  std::vector<int64_t> values(n);
  if (t.dtype == ir::DType::kI64) {
    if (n > 0) std::memcpy(values.data(), t.data.data(), n * 8);
  } else {
    for (uint64_t i = 0; i < n; ++i) values[i] = ir::IndexElementAt(t, i);
  }
  return values;
}

absl::StatusOr<ir::Tensor> WidenToI64(const ir::Tensor& t, const std::string& source) {
  RETURN_IF_ERROR(CheckIntegerTensor(t, source));
  if (t.dtype == ir::DType::kI64) return t;
  ASSIGN_OR_RETURN(uint64_t n, t.NumElements());
  std::vector<uint8_t> bytes(n * 8);
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t v = ir::IndexElementAt(t, i);
    std::memcpy(bytes.data() + 8 * i, &v, 8);
  }
  ir::Tensor out = t;
  out.dtype = ir::DType::kI64;
  out.data = ir::TensorData::Owned(std::move(bytes));
  return out;
}

absl::StatusOr<std::vector<int64_t>> TokenIdsFromTensor(const ir::Tensor& t,
                                                        const std::string& source) {
  RETURN_IF_ERROR(CheckIntegerTensor(t, source));
  if (t.dims.size() != 1 && t.dims.size() != 2) {
    return absl::InvalidArgumentError(source + ": token ids have shape " +
                                      ir::Shape::FromDims(t.dims).ToString() +
                                      " (expected [n] or [rows, n])");
  }
  return IntegerValues(t, source);
}

absl::StatusOr<std::vector<int64_t>> LoadTokenIds(const std::string& npy_path) {
  ASSIGN_OR_RETURN(ir::Tensor t, numpy::ReadNpy(npy_path));
  return TokenIdsFromTensor(t, npy_path);
}

absl::Status CheckTokenIds(const std::vector<int64_t>& ids, int64_t vocab,
                           const std::string& source) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!Valid(ids[i], vocab)) return BadId(source, "index " + std::to_string(i), ids[i], vocab);
  }
  return absl::OkStatus();
}

absl::Status CheckTokenTensor(const ir::Tensor& t, int64_t vocab, const std::string& source) {
  RETURN_IF_ERROR(CheckIntegerTensor(t, source));
  ASSIGN_OR_RETURN(uint64_t n, t.NumElements());
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t id = ir::IndexElementAt(t, i);
    if (!Valid(id, vocab)) return BadId(source, ArrayPosition(i, t.dims), id, vocab);
  }
  return absl::OkStatus();
}

int64_t KnownMaxPositions(const ir::Model& model) {
  return model.architecture ? model.architecture->max_position_embeddings : 0;
}

absl::Status CheckTokenSequenceLength(const ir::Tensor& t, int64_t max_positions,
                                      const std::string& source) {
  if (t.dims.empty()) return absl::OkStatus();
  const int64_t len = t.dims.back();
  const std::string shape = ir::Shape::FromDims(t.dims).ToString();
  if (len == 0) {
    return absl::InvalidArgumentError(source + ": no tokens (shape " + shape +
                                      "); a decoder needs at least one token per row");
  }
  if (max_positions > 0 && len > max_positions) {
    return absl::InvalidArgumentError(
        source + ": " + std::to_string(len) + " tokens per row (shape " + shape +
        "), more than the model's max_position_embeddings " + std::to_string(max_positions) +
        " (config.json); split the sequence into windows of at most that length");
  }
  return absl::OkStatus();
}

int64_t KnownVocabSize(const ir::Model& model) {
  return model.architecture ? model.architecture->vocab_size : 0;
}

}  // namespace slimpack::calibration
