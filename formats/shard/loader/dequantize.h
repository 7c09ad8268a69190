// Dequantization to f32 of the layouts in spec.md section 5:
//   x = float32(q - zero_point) * float32(scale)   (one rounding, no FMA),
// for int8 per-channel, int8 group-wise and int4 group-wise (low nibble first)
// with f32 or f16 scales, ggml's blocks (layout ggml_blocks: each block
// decoded with its own f16 scales, as ggml does), FP8 E4M3 group-wise
// (x = f(q) * float32(scale), f the E4M3FN value of the byte; one scalar
// table lookup for every DequantImpl), plus plain f32/f16/bf16
// conversion. The vectorised kernels (AVX2 on x86-64 chosen at
// run time, NEON on arm64) are bit-identical to the scalar reference.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_DEQUANTIZE_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_DEQUANTIZE_H_

#include <cstdint>
#include <vector>

#include "formats/shard/format.h"
#include "formats/shard/loader/status.h"

namespace slimpack::loader {

// A tensor and its quantization parameters, as raw memory (typically
// TensorView data). Byte counts are checked against the shape.
struct QuantizedTensorRef {
  shard::LayoutKind layout = shard::LayoutKind::kPlain;
  shard::DType dtype = shard::DType::kF32;
  std::vector<uint64_t> shape;
  int32_t axis = 0;          // quantized layouts
  uint64_t group_size = 0;   // kInt4GroupWise, kInt8GroupWise, kFp8E4M3GroupWise
  uint64_t block_rows = 1;   // kFp8E4M3GroupWise of rank 2, axis 1: rows sharing a scale
  uint32_t block_type = 0;   // kGgmlBlocks: ggml's type number
  const void* data = nullptr;
  uint64_t data_bytes = 0;
  const void* scale = nullptr;      // scale_dtype elements, shape per spec.md
  uint64_t scale_count = 0;         // elements
  shard::DType scale_dtype = shard::DType::kF32;  // kF32 or kF16
  const void* zero_point = nullptr;  // same dtype as data, or nullptr (always for fp8)
  uint64_t zero_point_bytes = 0;
};

enum class DequantImpl {
  kBest,    // AVX2 / NEON when available
  kScalar,  // the reference
};

// Writes the tensor's numel f32 values to out[0, out_count).
// InvalidArgument when out_count != numel, a byte count does not match the
// shape, or axis/group size are invalid; Unimplemented for a plain dtype
// other than f32/f16/bf16.
Status DequantizeToF32(const QuantizedTensorRef& ref, float* out,
                       uint64_t out_count, DequantImpl impl = DequantImpl::kBest);

// Which kernels kBest uses on this CPU: "avx2", "neon" or "scalar".
const char* DequantImplementation();

// IEEE half / bfloat16 bits to float (exact).
float HalfToFloat(uint16_t h);
float BFloat16ToFloat(uint16_t b);
// An OCP E4M3FN byte to float (exact; 0x7F and 0xFF are NaN, 0x80 is -0).
float Fp8E4M3ToFloat(uint8_t q);

}  // namespace slimpack::loader

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_DEQUANTIZE_H_
