// The per-tensor hooks through which the converter changes how a tensor is
// stored while the writer streams it chunk by chunk: float casts, and the
// bytes of tensors quantized only when they are written.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_TENSOR_ENCODER_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_TENSOR_ENCODER_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/dtype.h"
#include "ir/tensor.h"

namespace slimpack::shard_writer {

struct TensorEncoder {
  // The dtype `t` is stored as. Unset: every tensor keeps its dtype.
  std::function<ir::DType(const ir::Tensor& t)> output_dtype;
  // Converts `numel` elements of `from` at `src` into `to` at `dst`. Called
  // only when output_dtype differs from the tensor's dtype, possibly many
  // times per tensor (on consecutive element runs) and from several threads
  // at once, so it must be stateless. Errors are annotated with the tensor.
  std::function<absl::Status(ir::DType from, const uint8_t* src, ir::DType to,
                             uint8_t* dst, uint64_t numel)>
      convert;
  // The bytes of a tensor whose data is ir::TensorData::Deferred (a weight
  // quantized when it is written, or its scale / zero point), exactly
  // t.data.size() of them in t.dtype; the encoder's cast, if any, applies
  // to them as to any tensor. Called once per such tensor, from several
  // threads at once. Unset: a deferred tensor is an Internal error.
  std::function<absl::StatusOr<ir::TensorData>(const ir::Tensor& t)> produce;
  // Optional, beside `produce`: the same bytes handed to `sink` in order,
  // in pieces, as they are made (each call's bytes follow the previous
  // call's; calls one at a time, from any thread), so the writer hashes and
  // writes a piece while later ones are made and never holds the whole
  // tensor. Used for tensors the writer stores in their own dtype; an
  // error from `sink` must be returned.
  using Sink = std::function<absl::Status(const uint8_t* data, uint64_t size)>;
  std::function<absl::Status(const ir::Tensor& t, const Sink& sink)> produce_streamed;
  // Optional: makes deferred tensor `t`'s bytes now and keeps them for the
  // writer's later `produce`/`produce_streamed` call, which hands them over
  // (the same bytes). Called by a writer thread with no file left to write,
  // for the tensor after the one another writer is writing; it may skip a
  // tensor already being made. At most once per tensor.
  std::function<void(const ir::Tensor& t)> produce_ahead;
  // How many elements of deferred sparse tensor `t` (t.sparsity set) its
  // producer makes zero: its sparsity record is planned before its bytes
  // exist, and the writer checks the bytes against it. nullopt: unknown.
  std::function<std::optional<uint64_t>(const ir::Tensor& t)> sparse_zeros;
};

// The writer hook for `--dtype`: f32/f16/bf16 tensors are stored as
// `target`, every other tensor (f64, integers, bool, 4-bit) unchanged.
// Without a target every tensor keeps its dtype.
TensorEncoder FloatCastEncoder(std::optional<ir::DType> target);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_TENSOR_ENCODER_H_
