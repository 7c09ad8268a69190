// Random tiny checkpoints for the decoder-graph and eval tests.
#include "tests/hf/tiny_checkpoint.h"

#include <cmath>
#include <cstring>
#include <random>

#include "formats/safetensors/safetensors_writer.h"
#include "gtest/gtest.h"

namespace slimpack::hf::testing {

std::vector<ir::Tensor> RandomDecoderTensors(const safetensors::testing::TinyDecoder& decoder,
                                             ir::DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-0.5f, 0.5f);
  std::vector<ir::Tensor> out = decoder.Tensors();
  for (ir::Tensor& t : out) {
    const uint64_t n = *t.NumElements();
    const bool norm = t.name.find("norm") != std::string::npos;
    const bool embed = t.name.find("embed_tokens") != std::string::npos;
    const float scale = norm || embed || t.dims.size() < 2
                            ? 1.0f
                            : 2.0f / std::sqrt(static_cast<float>(t.dims[1]));
    std::vector<uint8_t> bytes(n * (dtype == ir::DType::kF32 ? 4 : 2));
    for (uint64_t i = 0; i < n; ++i) {
      const float v = norm ? 1.0f + 0.5f * uni(rng) : scale * uni(rng);
      if (dtype == ir::DType::kF32) {
        std::memcpy(&bytes[4 * i], &v, 4);
      } else {
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        const uint16_t bf = static_cast<uint16_t>(bits >> 16);
        std::memcpy(&bytes[2 * i], &bf, 2);
      }
    }
    t.dtype = dtype;
    t.data = ir::TensorData::Owned(std::move(bytes));
  }
  return out;
}

void WriteCheckpoint(const std::string& dir, const safetensors::testing::TinyDecoder& decoder,
                     const std::vector<ir::Tensor>& tensors) {
  safetensors::testing::WriteFile(dir + "/config.json", decoder.ConfigJson());
  ASSERT_TRUE(safetensors::WriteSafetensorsFile(dir + "/model.safetensors", tensors).ok());
}

std::map<std::string, ir::Tensor> ByName(const std::vector<ir::Tensor>& tensors) {
  std::map<std::string, ir::Tensor> m;
  for (const ir::Tensor& t : tensors) m[t.name] = t;
  return m;
}

}  // namespace slimpack::hf::testing
