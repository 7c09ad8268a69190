// The packed-linear readers behind prequantized.cc: each unpacks one
// checkpoint format's tensors (GPTQ qweight/qzeros/scales/g_idx, AutoAWQ's
// GEMM order, compressed-tensors' weight_packed) into one Grid in checkpoint
// order, checking sizes, codes and scales as it goes. Internal to the room.
#ifndef SLIMPACK_FORMATS_SAFETENSORS_PREQUANTIZED_GRID_H_
#define SLIMPACK_FORMATS_SAFETENSORS_PREQUANTIZED_GRID_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/safetensors/prequantized.h"
#include "ir/tensor.h"

namespace slimpack::safetensors::prequant_internal {

// The grid of one linear in checkpoint order: code(i, o) for input row i
// and output column o, zero(g, o), scale(g, o).
struct Grid {
  int64_t in = 0, out = 0, groups = 0, group = 0;
  int bits = 0;
  std::vector<uint8_t> code;   // [in, out]
  std::vector<uint8_t> zero;   // [groups, out]
  std::vector<float> scale;    // [groups, out]
  std::vector<int64_t> group_of;  // [in]
  // compressed-tensors symmetric: the codes are signed (stored - 2^(bits-1))
  // and there is no zero point.
  bool signed_codes = false;
};

// "file: tensor 'name'" for errors.
std::string Where(const ir::Tensor& t);

// Errors name the tensor, its file and the field (prequantized.h).
absl::StatusOr<Grid> ReadGptq(const PrequantConfig& c, const PackedLinear& p);
absl::StatusOr<Grid> ReadAwq(const PrequantConfig& c, const PackedLinear& p);
absl::StatusOr<Grid> ReadCompressed(const PrequantConfig& c, const PackedLinear& p);

}  // namespace slimpack::safetensors::prequant_internal

#endif  // SLIMPACK_FORMATS_SAFETENSORS_PREQUANTIZED_GRID_H_
