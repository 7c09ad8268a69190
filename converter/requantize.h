// --allow-requantize: weights that are already quantized (a GGUF's ggml
// blocks, a GPTQ / AWQ / compressed-tensors / FP8 checkpoint's codes, a
// quantized artifact) decoded to f32 so that another scheme can quantize
// them. The two roundings add up, which is why convert refuses this without
// the flag, as llama-quantize does.
#ifndef SLIMPACK_CONVERTER_REQUANTIZE_H_
#define SLIMPACK_CONVERTER_REQUANTIZE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::converter {

// Replaces every quantized initializer of `model` (a decoder checkpoint:
// no graph nodes read the parameter tensors) by an f32 tensor of its
// dequantized values under the same name, dims and role, with an
// act-order input permutation undone (the columns back in checkpoint
// order, the `.input_perm` tensor removed) and the scale / zero-point
// tensors removed. Returns how many weights it decoded. InvalidArgument
// naming `source` and the tensor when one cannot be decoded (its scale
// missing or malformed).
absl::StatusOr<int64_t> DequantizeWeightsInPlace(ir::Model& model, const std::string& source);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_REQUANTIZE_H_
