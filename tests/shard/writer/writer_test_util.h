// Fixtures for the artifact writer tests: temp directories, file helpers,
// a small llama-shaped safetensors checkpoint and an ONNX model with a
// subgraph and a tensor attribute, all built in code.
#ifndef SLIMPACK_TESTS_SHARD_WRITER_WRITER_TEST_UTIL_H_
#define SLIMPACK_TESTS_SHARD_WRITER_WRITER_TEST_UTIL_H_

#include "tests/testing/temp_dir.h"
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "nlohmann/json.hpp"

namespace slimpack::shard_writer::testing {

using ::slimpack::testing::TempDir;  // tests/testing/temp_dir.h

void WriteFile(const std::string& path, const std::string& bytes);
std::string ReadFile(const std::string& path);
// Writes an edited `manifest` as `artifact`/manifest.json in the writer's
// layout with its self-hash recomputed, so a loader sees only the edit
// (fatal gtest failure if the hash cannot be computed).
void RewriteManifest(const std::string& artifact, const nlohmann::json& manifest);
bool Exists(const std::string& path);
// Sorted entry names of `dir` (no . and ..); empty if it does not exist.
std::vector<std::string> ListDir(const std::string& dir);
// file name -> SHA-256 hex of every regular file in `dir`.
std::map<std::string, std::string> HashFiles(const std::string& dir);

// Deterministic floats: normal values in [-3, 3) plus, every 97th element,
// a special (NaN, +-Inf, -0, f16 subnormals and overflows, ties).
std::vector<float> TestFloats(size_t n, uint32_t seed);

ir::Tensor F32Tensor(const std::string& name, std::vector<int64_t> dims,
                     uint32_t seed);

struct TinyLlama {
  int64_t layers = 3, hidden = 32, heads = 4, kv_heads = 2, intermediate = 64,
          vocab = 96;
  std::vector<ir::Tensor> Tensors() const;
  std::string ConfigJson() const;
};

// Writes model.safetensors (f32), config.json and tokenizer.json into `dir`.
void WriteTinyLlamaCheckpoint(const std::string& dir, const TinyLlama& spec = {});

// Writes an ONNX model: Conv -> Relu -> Add(ConstantOfShape) -> If with a
// then-branch initializer and an else-branch Identity. Its float weights
// come from TestFloats; "cond" is a bool initializer, "shape" an i64 one.
void WriteOnnxFixture(const std::string& path);

}  // namespace slimpack::shard_writer::testing

#endif  // SLIMPACK_TESTS_SHARD_WRITER_WRITER_TEST_UTIL_H_
