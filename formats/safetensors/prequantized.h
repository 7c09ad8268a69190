// Hugging Face checkpoints that are already quantized (issue 18, import):
// GPTQ (AutoGPTQ / GPTQModel), AWQ (AutoAWQ GEMM) and compressed-tensors
// pack-quantized (llm-compressor) packed linears become
// slimpack quantized weights (ir::QuantLayout) carrying the checkpoint's
// integer codes, scales and zero points as they are: no dequantize, no
// requantize. The packings are described in
// scripts/fixtures/make_prequantized_checkpoints.py, which writes the test
// fixtures.
//
// For each packed linear `<p>` (`<p>.qweight`, `<p>.qzeros`, `<p>.scales`,
// GPTQ also `<p>.g_idx`) the checkpoint gets, in place of those tensors:
//   <p>.weight             [out, in] u4 (bits 2, 3, 4) or u8 (bits 8): the
//                          codes, as the HF nn.Linear weight is laid out
//   <p>.weight.scale       the scales: f16 as the checkpoint stores them, f32
//                          for bf16 / f32 ones (widened exactly)
//   <p>.weight.zero_point  u4 / u8: the zero points (GPTQ v1's stored
//                          "zero minus one" plus one)
//   <p>.weight.input_perm  i64 [in], act-order only (hf::kInputPermSuffix)
// compressed-tensors names them `<p>.weight_packed`, `<p>.weight_scale`,
// `<p>.weight_zero_point` (asymmetric), `<p>.weight_shape` and
// `<p>.weight_g_idx` (act-order); its codes are stored as signed value plus
// 2^(bits-1): a symmetric scheme becomes i4 / i8 codes (the signed values)
// without a zero point, an asymmetric one u4 / u8 codes and zero points as
// stored (their difference is the signed difference).
// Bits 2, 3 and 4 use int4_groupwise along the input axis (group_size -1: one
// group of `in`); bits 8 use int8_per_channel over the output rows when
// there is one group per row, int8_groupwise along the input axis when the
// groups are shorter.
//
// Act-order (a g_idx that is not i / group_size): the weight's input rows
// are permuted so that each group's rows are contiguous, perm[j] being the
// checkpoint row stored at position j (rows sorted by group, stably), and
// the permutation is kept as `<p>.weight.input_perm`. The decoder graph
// builder reads the linear's input through Gather(x, perm, axis=-1):
// x' W'^T = x W^T exactly, since W'[:, j] = W[:, perm[j]] and
// x'[j] = x[perm[j]]. A g_idx whose groups do not have exactly group_size
// rows (the last one the remainder) cannot be made contiguous and is refused.
#ifndef SLIMPACK_FORMATS_SAFETENSORS_PREQUANTIZED_H_
#define SLIMPACK_FORMATS_SAFETENSORS_PREQUANTIZED_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "nlohmann/json.hpp"

namespace slimpack::safetensors {

// kFp8: 8-bit float E4M3 weights with f32/bf16/f16 scales, from
// compressed-tensors' "float-quantized" format or Hugging Face's "fp8"
// (FineGrainedFP8, DeepSeek-V3's weight_scale_inv); prequantized_fp8.cc.
enum class PrequantMethod { kGptq, kAwq, kCompressedTensors, kFp8 };

// What the checkpoint's quantization config says, after checking it.
struct PrequantConfig {
  PrequantMethod method = PrequantMethod::kGptq;
  std::string source;  // "config.json: quantization_config" or the file
  int bits = 0;
  int64_t group_size = 0;        // -1: one group over all input rows
  // GPTQ: informative (zero points are read); compressed-tensors: no zero
  // point tensor, signed codes.
  bool sym = true;
  bool desc_act = false;         // GPTQ: act-order expected (g_idx decides)
  bool zeros_minus_one = false;  // GPTQ checkpoint_format "gptq" (v1)
  bool awq_gemv = false;         // AWQ version "gemv": AutoAWQ's GEMV packing
  // kFp8: the scale tensor's suffix (".weight_scale" or ".weight_scale_inv")
  // and the block of [out, in] one scale covers; 0 means the whole
  // dimension (strategy "channel": rows 1, cols 0; "tensor": 0, 0).
  std::string fp8_scale_suffix;
  int64_t fp8_block_rows = 0, fp8_block_cols = 0;
};

// Parses a quantization config object (config.json's quantization_config,
// quantize_config.json, or AutoAWQ's quant_config.json), `source` naming it
// in errors. quant_method "gptq" (also assumed when absent and the object
// has bits and group_size, as old quantize_config.json files) or "awq".
// Fields read: GPTQ bits (2, 3, 4, 8; 3-bit values straddle int32 words,
// 32 values in 3 words), group_size (-1 or >= 1), sym, desc_act,
// checkpoint_format (or format): "gptq" = v1 with zeros minus one (the
// default), "gptq_v2" = zeros as they are; is_marlin_format must be false.
// AWQ bits / w_bit (4), group_size / q_group_size (>= 1 or -1), zero_point (true),
// version ("gemm", or "gemv": group_size 32, 64 or >= 128, the sizes
// AutoAWQ's GEMV layout has). compressed-tensors: format "pack-quantized", one weight
// scheme over config_groups (type "int", num_bits 2 / 4 / 8, strategy
// "group" with group_size or "channel", symmetric), no input_activations
// (weight-only), no sparsity_config other than dense; format
// "float-quantized": type "float", num_bits 8 (E4M3), strategy "channel",
// "tensor" or "block" (block_structure), static symmetric weights,
// input_activations null or dynamic (kFp8). quant_method "fp8"
// (FineGrainedFP8): fmt e4m3, activation_scheme dynamic, weight_block_size
// (kFp8, weight_scale_inv). Errors: InvalidArgument for a field of the wrong type
// or range, Unimplemented for a method, bit width, format or version we do
// not read, each naming `source`, the field and the value found.
absl::StatusOr<PrequantConfig> ParsePrequantConfig(const nlohmann::json& j,
                                                   const std::string& source);

// The quantization config of the checkpoint in `dir`: config.json's
// quantization_config, else quantize_config.json, else quant_config.json;
// nullopt when none of them says the weights are quantized. Errors as
// ParsePrequantConfig, plus file read / JSON errors naming the file.
absl::StatusOr<std::optional<PrequantConfig>> ReadPrequantConfig(const std::string& dir);

// The packed tensors of one linear (`prefix` without the dot). g_idx may be
// null (GPTQ without g_idx: i / group_size; AWQ never has one).
// compressed-tensors: qweight = weight_packed, qzeros = weight_zero_point
// (null when symmetric), scales = weight_scale, g_idx = weight_g_idx,
// shape = weight_shape.
struct PackedLinear {
  std::string prefix;
  const ir::Tensor* qweight = nullptr;
  const ir::Tensor* qzeros = nullptr;
  const ir::Tensor* scales = nullptr;
  const ir::Tensor* g_idx = nullptr;
  const ir::Tensor* shape = nullptr;
};

// Unpacks one linear into the tensors listed above (weight, scale, zero
// point, and the input permutation when act-order needs one), their
// provenance that of `qweight`. Errors name the file, the tensor and the
// field with the value found: InvalidArgument for a dtype, a shape or a
// packed size that disagrees with the config or the other tensors (bits
// not matching the packing), a g_idx value out of range or groups that
// cannot be made contiguous, a zero or non-finite scale, a GPTQ v1 zero
// field holding 2^bits - 1 (the zero point would be 2^bits); Unimplemented
// for an 8-bit group size other than -1 / in.
absl::StatusOr<std::vector<ir::Tensor>> UnpackLinear(const PrequantConfig& config,
                                                     const PackedLinear& packed);

// Replaces every packed linear of `tensors` (found by its `.qweight`, or
// `.weight_packed` for compressed-tensors) with
// UnpackLinear's tensors. InvalidArgument naming the file and tensor for a
// `.qweight` without its `.qzeros` / `.scales`, a `.qzeros` / `.scales` /
// `.g_idx` without a `.qweight`, a `.weight` beside a `.qweight`, or a
// config that announces quantization when no tensor is packed.
absl::Status ImportPrequantized(const PrequantConfig& config, std::vector<ir::Tensor>& tensors);

// kFp8: every tensor the safetensors reader marked as F8_E4M3 bytes
// (dtype u8, layout fp8_e4m3_groupwise without a scale yet) gets its scale:
// `<p>.weight` [out, in] with `<p>` + config.fp8_scale_suffix of shape
// [ceil(out / rows), ceil(in / cols)] (the block sizes; [out, 1] or [1]
// for channel / tensor) becomes fp8_e4m3_groupwise along the input axis
// with group_size = the block's columns, block_rows = the block's rows
// (when more than one) and scale `<p>.weight.scale` [ceil(out / rows),
// ceil(in / cols)], the checkpoint's scales as they are (so the values are
// the checkpoint's exactly). f16 scales stay f16, bf16 / f32
// are stored f32. InvalidArgument naming the file, tensor and value: a
// marked tensor that is not rank 2 or has no scale beside it, a scale of
// the wrong shape or dtype or a zero / negative / non-finite one, a NaN
// code (0x7F / 0xFF) in the weight, a scale tensor nothing uses.
absl::Status ImportFp8(const PrequantConfig& config, std::vector<ir::Tensor>& tensors);

}  // namespace slimpack::safetensors

#endif  // SLIMPACK_FORMATS_SAFETENSORS_PREQUANTIZED_H_
