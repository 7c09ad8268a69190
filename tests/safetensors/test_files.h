// Helpers for safetensors tests: a self-deleting temp directory, raw file
// writers for handmade (possibly corrupt) files, and tensor builders.
#ifndef SLIMPACK_TESTS_SAFETENSORS_TEST_FILES_H_
#define SLIMPACK_TESTS_SAFETENSORS_TEST_FILES_H_

#include "tests/testing/temp_dir.h"
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace slimpack::safetensors::testing {

using ::slimpack::testing::TempDir;  // tests/testing/temp_dir.h

// Writes `bytes` to `path` (test failure if it cannot).
void WriteFile(const std::string& path, const std::string& bytes);
std::string ReadWholeFile(const std::string& path);
// Sorted names of the entries of `dir` (without . and ..).
std::vector<std::string> ListDir(const std::string& dir);

// An 8-byte little-endian length prefix for `header`, the header, `data`.
std::string RawSafetensors(const std::string& header, const std::string& data);
// RawSafetensors with `declared_length` in the prefix instead of the real one.
std::string RawWithLength(uint64_t declared_length, const std::string& rest);

// Deterministic pseudo-random bytes (xorshift) of length n.
std::vector<uint8_t> PatternBytes(size_t n, uint32_t seed);

ir::Tensor MakeTensor(const std::string& name, ir::DType dtype,
                      std::vector<int64_t> dims, std::vector<uint8_t> bytes);
// BF16 tensor whose values are the top halves of floats seed+i*0.25.
ir::Tensor MakeBf16(const std::string& name, std::vector<int64_t> dims,
                    float seed);

// Tensors of a tiny llama/qwen2 layout matching config below.
struct TinyDecoder {
  std::string model_type = "llama";
  int64_t layers = 2, hidden = 8, heads = 2, kv_heads = 1, head_dim = 4,
          intermediate = 16, vocab = 32;
  bool biases = false;  // q/k/v biases (qwen2)
  bool tie = false;     // tie_word_embeddings: no lm_head
  std::vector<ir::Tensor> Tensors() const;
  std::string ConfigJson() const;
};

// model.safetensors.index.json text for a tensor -> shard map.
std::string IndexJson(const std::map<std::string, std::string>& weight_map,
                      uint64_t total_size);

}  // namespace slimpack::safetensors::testing

#endif  // SLIMPACK_TESTS_SAFETENSORS_TEST_FILES_H_
