// The valid artifacts the loader tests start from (and then corrupt).
#ifndef SLIMPACK_TESTS_SHARD_LOADER_SAMPLE_ARTIFACTS_H_
#define SLIMPACK_TESTS_SHARD_LOADER_SAMPLE_ARTIFACTS_H_

#include "tests/shard/loader/test_artifact_writer.h"

namespace slimpack::loader::testing {

// Nine tensors in two shards, in storage order:
//   shard 0: a f32[4,4] (0..15), b f32[8], c i8[3,5] int8_per_channel
//            (axis 0, scale c.scale, zero point c.zp), c.scale f32[3], c.zp i8[3]
//   shard 1: d f32[100], q4 i4[4,10] int4_groupwise (axis 1, group 4,
//            scale q4.scale f32[4,3], zero point q4.zp i4[4,3]), q4.scale, q4.zp
// An ONNX graph x -> MatMul(a) -> Add(b) -> If(then: Identity(y)), with a
// tensor attribute referring to d; carried tokenizer.json.
TestArtifactSpec SampleSpec();

// Index of each tensor in the manifest's storage order.
enum SampleTensor { kA = 0, kB, kC, kCScale, kCZp, kD, kQ4, kQ4Scale, kQ4Zp };

// Two fp8_e4m3_groupwise tensors in one shard, required_features
// ["fp8_e4m3"] (plus "f16_scales" with f16_scales), in storage order:
//   v u8[10,7] axis 0, group 5 (divides: scale v.scale [2,7]),
//   v.scale, w u8[8,40] axis 1, group 16 (does not divide: scale w.scale
//   [8,3]), w.scale.
// Codes are Fp8SampleCode; scale k is the half Fp8SampleScaleHalf, stored
// as f16 or as its exact f32 value, so both variants dequantize the same.
// w_block_rows > 1: w's rows share scales in blocks of that many (scale
// [ceil(8 / w_block_rows), 3], feature "fp8_block_rows").
TestArtifact Fp8SampleArtifact(bool f16_scales, uint64_t w_block_rows = 1);
enum Fp8SampleTensor { kFp8V = 0, kFp8VScale, kFp8W, kFp8WScale };
// Code i of v or w: w's first 256 elements hold every byte once.
uint8_t Fp8SampleCode(bool w, uint64_t i);
// Scale k of v or w as half bits: normal, some negative.
uint16_t Fp8SampleScaleHalf(bool w, uint64_t k);

}  // namespace slimpack::loader::testing

#endif  // SLIMPACK_TESTS_SHARD_LOADER_SAMPLE_ARTIFACTS_H_
