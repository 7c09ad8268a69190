// Round-to-nearest quantization of one weight tensor (rtn, rtn-mse,
// imatrix: every output row is quantized on its own), read from the tensor a
// block of rows at a time: the f32 copy, the codes and the dequantized
// values the error is measured on exist for one block only, so the working
// set is bounded whatever the tensor's size. The bytes and the error sums
// are those of quantizing the whole matrix at once.
#ifndef SLIMPACK_QUANTIZE_RTN_TENSOR_H_
#define SLIMPACK_QUANTIZE_RTN_TENSOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

#include "ir/tensor.h"
#include "quantize/numerics/error_stats.h"
#include "quantize/numerics/pack.h"
#include "quantize/numerics/rtn.h"
#include "quantize/value_fold.h"
#include "support/byte_sink.h"
#include "support/input_pages.h"

namespace slimpack::quantize {

struct RtnTensorOptions {
  quant::Scheme scheme;
  // The tensor is [cols, rows] (ONNX MatMul B): quantized whole, since a
  // row of the matrix is a strided column of the tensor.
  bool transposed = false;
  std::string algorithm;  // recorded in the layout ("rtn", "imatrix", ...)
  quant::RtnOptions rtn;  // importance (cols floats) stays the caller's
  // Rows per block; 0: as many as make about kBlockWeights weights, even.
  int64_t block_rows = 0;
  // When set, each block is read through it (InputPages::Copy: a mapped
  // checkpoint's bytes through the file, not the mapping) and its pages are
  // given back once read (a mapped checkpoint is read once), so they never
  // pile up either.
  const support::InputPages* release = nullptr;
  // False: QuantizedWeight::error is left empty. Measuring it dequantizes
  // every weight and sums in double, 9 % of an int4 conversion's CPU, for a
  // figure only `-v` prints.
  bool measure_error = true;
  // True: a block of rows is quantized on the calling thread alone instead
  // of on rtn.threads (a weight quantized whole, transposed, still uses
  // them): for callers whose own threads keep the cores busy, where
  // splitting each 4 MiB block started a thread per block (~640 for
  // llama.cpp's 1.33 GB peer input, a quarter second of system time). The
  // cost, for the shard writer: more --threads than shard writers plus one
  // weight ahead per shard (a one- or two-shard model with --threads 8)
  // leave the rest idle. Same bytes either way.
  bool blocks_on_caller_thread = false;
  // Set: the values quantized are the tensor's rescaled by it as each block
  // is read (AWQ's scales folded lazily), the error measured against them.
  // Its lengths must match the matrix (InvalidArgument naming the tensor);
  // not for transposed tensors.
  std::shared_ptr<const ValueFold> fold;
};

inline constexpr int64_t kBlockWeights = int64_t{1} << 20;  // 4 MiB of f32

// A weight as stored (RTN here; GPTQ's results are kept the same way).
struct QuantizedWeight {
  quant::PackedTensors packed;  // bytes filled (quant::ToIrTensors' layout)
  quant::ErrorStats error;      // stored values vs the f32 weights
};

// Quantizes `original` (f32/f16/bf16; rank 2, or rank > 2 with dim 0 the
// rows for 8-bit schemes). Errors name the tensor: Unimplemented for
// another dtype, InvalidArgument from quant::ToIrTensors' checks, the
// quantizer's own errors.
absl::StatusOr<QuantizedWeight> QuantizeRtnTensor(const ir::Tensor& original,
                                            const RtnTensorOptions& options);

// Receives a packed weight's bytes in order, block by block.
using WeightSink = support::ByteSink;

// QuantizeRtnTensor with the packed weight's bytes handed to `sink` as each
// block of rows is quantized instead of gathered (the result's
// packed.weight.data is left empty; scale, zero point and error as
// QuantizeRtnTensor's): the same bytes, without a buffer of the whole
// weight. A sink error stops the quantization and is returned.
absl::StatusOr<QuantizedWeight> QuantizeRtnTensorStreamed(const ir::Tensor& original,
                                                          const RtnTensorOptions& options,
                                                          const WeightSink& sink);

// A weight quantized whole (`q`, from the f32 matrix `w`, `deq` its
// dequantized values) as it is stored: packed in `original`'s layout, its
// error against `w`. Shared with GPTQ, whose codes come from elsewhere.
absl::StatusOr<QuantizedWeight> StoredWeight(const quant::QuantizedMatrix& q,
                                             const std::vector<float>& w,
                                             const std::vector<float>& deq,
                                             const ir::Tensor& original, bool transposed,
                                             const std::string& algorithm);

// [rows, cols] of the matrix the quantizers see (weight_matrix.h's
// AsMatrix), without reading the data.
absl::StatusOr<std::pair<int64_t, int64_t>> MatrixShape(const ir::Tensor& t, bool transposed);

}  // namespace slimpack::quantize

#endif  // SLIMPACK_QUANTIZE_RTN_TENSOR_H_
