// ggml's quantized block types as an artifact layout (formats/shard/spec.md,
// "ggml_blocks"): their geometry and the reference decoders, bit-identical
// to ggml's dequantize_row_* (formats/gguf has the encoders and the golden
// tests against ggml's own bytes). They live in the IR, beside the other
// layouts' formula (ir/quant.h), because every consumer of a quantized
// tensor — the interpreter, reports, exports — dequantizes through the IR.
//
// A row of n weights (n a multiple of the block size) is n / block_size
// blocks laid end to end; the values of a block are defined by its bytes
// alone (its own f16 scales), so rows can be cut and moved freely.
#ifndef SLIMPACK_IR_GGML_BLOCKS_H_
#define SLIMPACK_IR_GGML_BLOCKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace slimpack::ir {

// Values are ggml's enum ggml_type (part of the GGUF format, never change);
// kNone (ggml's F32, never a block type) means "no block type".
enum class GgmlType : uint32_t {
  kNone = 0,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
};

struct GgmlGeometry {
  uint32_t block_size = 0;   // weights per block: 32, or 256 for the K types
  uint32_t block_bytes = 0;  // bytes per block (ggml's type_size)
  int bits = 0;              // nominal bits of a code: 2..8
  bool has_min = false;      // values are d*q - m (q4_1, q5_1, q2_K, q4_K, q5_K)
};

// Geometry of a block type; nullopt for kNone or a value that is not one.
std::optional<GgmlGeometry> GgmlTypeGeometry(GgmlType type);
// Lower-case names as the manifest spells them: "q4_0", ..., "q8_0",
// "q2_k", ..., "q6_k"; "?" for anything else.
std::string_view GgmlTypeName(GgmlType type);
// Inverse of GgmlTypeName (case-insensitive, so ggml's "q4_K" parses);
// nullopt for an unknown name.
std::optional<GgmlType> GgmlTypeFromName(std::string_view name);
// "q4_0, q4_1, ...": the block types in ggml's order, for refusals.
std::string GgmlTypeNames();

// Bytes of a row of n weights; nullopt when the type is not a block type,
// n is not a multiple of its block size, or the size overflows.
std::optional<uint64_t> GgmlRowBytes(GgmlType type, uint64_t n);

// Decodes GgmlRowBytes(type, n) bytes at src into n floats exactly as
// ggml's dequantize_row_* does. Precondition (the caller has checked):
// GgmlRowBytes(type, n) has a value.
void DequantizeGgmlRow(GgmlType type, const uint8_t* src, uint64_t n, float* dst);

// Sub-block scale fields the encoders read back too (ggml's layouts):
// q3_K's j-th 6-bit scale minus 32 from its 12 packed bytes, and q4_K/q5_K's
// j-th 6-bit (scale, min) pair (ggml's get_scale_min_k4).
int GgmlQ3Scale(const uint8_t* scales, int j);
void GgmlScaleMinK4(const uint8_t* scales, int j, int* sc, int* m);

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_GGML_BLOCKS_H_
