// Writes a TinyDecoder-shaped HF checkpoint (config.json + model.safetensors)
// with small random weights, so logits stay in a range where 1e-4 absolute
// differences are meaningful.
#ifndef SLIMPACK_TESTS_HF_TINY_CHECKPOINT_H_
#define SLIMPACK_TESTS_HF_TINY_CHECKPOINT_H_

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tests/safetensors/test_files.h"

namespace slimpack::hf::testing {

// The tensors of `decoder` with values drawn from a fixed-seed generator
// (norm weights around 1, others ~U(-0.5, 0.5)/sqrt(fan_in)), as f32 or bf16.
std::vector<ir::Tensor> RandomDecoderTensors(const safetensors::testing::TinyDecoder& decoder,
                                             ir::DType dtype, uint32_t seed);

// Writes config.json and model.safetensors of `tensors` into `dir`.
void WriteCheckpoint(const std::string& dir, const safetensors::testing::TinyDecoder& decoder,
                     const std::vector<ir::Tensor>& tensors);

// name -> tensor.
std::map<std::string, ir::Tensor> ByName(const std::vector<ir::Tensor>& tensors);

}  // namespace slimpack::hf::testing

#endif  // SLIMPACK_TESTS_HF_TINY_CHECKPOINT_H_
