// A deliberately naive double-precision Llama/Qwen2 forward pass written
// straight from the HF modeling code, as the reference the graph is tested
// against. Weights are read from ir::Tensors (f32 or bf16).
#ifndef SLIMPACK_TESTS_HF_NAIVE_DECODER_H_
#define SLIMPACK_TESTS_HF_NAIVE_DECODER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace slimpack::hf::testing {

// logits [batch, seq, vocab] for ids [batch, seq] (row-major).
std::vector<double> NaiveDecoderLogits(const ir::ArchitectureInfo& arch,
                                       const std::map<std::string, ir::Tensor>& weights,
                                       const std::vector<int64_t>& ids, int64_t batch,
                                       int64_t seq);

}  // namespace slimpack::hf::testing

#endif  // SLIMPACK_TESTS_HF_NAIVE_DECODER_H_
