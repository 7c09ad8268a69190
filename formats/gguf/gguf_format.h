// GGUF version 3 (llama.cpp's model file) as constants: the container's
// value types, the ggml tensor types slimpack writes and reads, and their
// block geometry. Numbers follow ggml's `gguf.h`/`ggml.h` and the GGUF spec
// (github.com/ggerganov/ggml/blob/master/docs/gguf.md); they are part of the
// file format, so they never change.
//
// File layout (all little-endian):
//   u32 magic "GGUF", u32 version (3), u64 tensor_count, u64 kv_count,
//   kv_count × { string key, u32 value_type, value },
//   tensor_count × { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type,
//                    u64 offset (from the data section, multiple of alignment) },
//   zero padding to `general.alignment` (default 32; slimpack writes 64),
//   the data section.
// A string is u64 length + bytes (no terminator). An array value is
// u32 element type + u64 count + elements. ne[0] is the innermost (row)
// dimension: an ONNX/PyTorch [rows, cols] weight is ne = {cols, rows}.
#ifndef SLIMPACK_FORMATS_GGUF_GGUF_FORMAT_H_
#define SLIMPACK_FORMATS_GGUF_GGUF_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace slimpack::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
inline constexpr uint32_t kVersion = 3;
inline constexpr uint64_t kDefaultAlignment = 32;  // when general.alignment is absent
inline constexpr uint64_t kSlimpackAlignment = 64;  // what we write

// slimpack's own metadata in a GGUF it writes from an already-quantized
// source: the tensors whose grid no ggml type holds, so that they were
// decoded and encoded again (file order), and the relative L2 error each
// gained against the source's dequantized values (f32, same order).
inline constexpr std::string_view kRequantizedTensorsKey = "slimpack.requantized.tensors";
inline constexpr std::string_view kRequantizedRelL2Key = "slimpack.requantized.rel_l2";
inline constexpr uint32_t kMaxDims = 4;            // GGML_MAX_DIMS

enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// The ggml tensor types slimpack handles. Values are ggml's enum ggml_type.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
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
  kBF16 = 30,
};

// Weights per block and bytes per block (ggml's blck_size / type_size).
struct TypeTraits {
  std::string_view name;  // ggml's type name: "q4_0", "q4_K", "f16", ...
  uint32_t block_size;    // weights per block (1 for float types)
  uint32_t block_bytes;   // bytes per block
};

// Block geometry. QK_K = 256 weights per K-quant super-block.
inline constexpr uint32_t kQK = 32;   // Q4_0 .. Q8_0
inline constexpr uint32_t kQK_K = 256;
// K-quant scale bytes (6-bit scales and mins of eight 32-weight sub-blocks).
inline constexpr uint32_t kKScaleBytes = 12;

// Returns false for a type value slimpack does not know.
inline bool GetTypeTraits(uint32_t type, TypeTraits* out) {
  switch (static_cast<TensorType>(type)) {
    case TensorType::kF32: *out = {"f32", 1, 4}; return true;
    case TensorType::kF16: *out = {"f16", 1, 2}; return true;
    case TensorType::kBF16: *out = {"bf16", 1, 2}; return true;
    case TensorType::kQ4_0: *out = {"q4_0", kQK, 2 + kQK / 2}; return true;               // 18
    case TensorType::kQ4_1: *out = {"q4_1", kQK, 4 + kQK / 2}; return true;               // 20
    case TensorType::kQ5_0: *out = {"q5_0", kQK, 2 + 4 + kQK / 2}; return true;           // 22
    case TensorType::kQ5_1: *out = {"q5_1", kQK, 4 + 4 + kQK / 2}; return true;           // 24
    case TensorType::kQ8_0: *out = {"q8_0", kQK, 2 + kQK}; return true;                   // 34
    case TensorType::kQ2_K: *out = {"q2_K", kQK_K, kQK_K / 16 + kQK_K / 4 + 4}; return true;  // 84
    case TensorType::kQ3_K:
      *out = {"q3_K", kQK_K, kQK_K / 8 + kQK_K / 4 + 12 + 2};  // 110
      return true;
    case TensorType::kQ4_K: *out = {"q4_K", kQK_K, 4 + kKScaleBytes + kQK_K / 2}; return true;  // 144
    case TensorType::kQ5_K:
      *out = {"q5_K", kQK_K, 4 + kKScaleBytes + kQK_K / 8 + kQK_K / 2};  // 176
      return true;
    case TensorType::kQ6_K:
      *out = {"q6_K", kQK_K, kQK_K / 2 + kQK_K / 4 + kQK_K / 16 + 2};  // 210
      return true;
  }
  return false;
}

// ggml's name of a type slimpack handles ("q4_K"), "?" otherwise.
inline std::string_view TypeName(TensorType type) {
  TypeTraits traits;
  return GetTypeTraits(static_cast<uint32_t>(type), &traits) ? traits.name : "?";
}

// Weights per block (1 for float types and for a type slimpack does not
// handle).
inline uint32_t BlockSize(TensorType type) {
  TypeTraits traits;
  return GetTypeTraits(static_cast<uint32_t>(type), &traits) ? traits.block_size : 1;
}

// "f32, f16, q4_0, ...": the types slimpack handles in ggml's value order,
// for refusals that list them.
inline std::string SupportedTypeNames() {
  std::string out;
  for (uint32_t t = 0; t < 64; ++t) {
    TypeTraits traits;
    if (!GetTypeTraits(t, &traits)) continue;
    if (!out.empty()) out += ", ";
    out += std::string(traits.name);
  }
  return out;
}

}  // namespace slimpack::gguf

#endif  // SLIMPACK_FORMATS_GGUF_GGUF_FORMAT_H_
