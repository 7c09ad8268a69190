// Shared by the tests that measure the bundled LM (examples/tiny-llama)
// after compressing it: load the checkpoint, and perplexity on the first
// `windows` eval windows of 64 tokens with the pinned protocol. The test's
// CMake target defines SLIMPACK_TINY_LLAMA_DIR.
#ifndef SLIMPACK_TESTS_TESTING_TINY_LLAMA_EVAL_H_
#define SLIMPACK_TESTS_TESTING_TINY_LLAMA_EVAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "eval/perplexity.h"
#include "calibration/token_ids.h"
#include "runtime/interpreter.h"
#include "hf/llama_graph_builder.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "formats/safetensors/safetensors_reader.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::testing {

inline const std::string& TinyLlamaDir() {
  static const std::string dir = SLIMPACK_TINY_LLAMA_DIR;
  return dir;
}
inline constexpr int64_t kTinyLlamaWindow = 64;

inline ir::Model TinyLlamaCheckpoint() {
  auto ckpt = safetensors::ImportSafetensors(TinyLlamaDir());
  EXPECT_THAT(ckpt, IsOk());
  return *std::move(ckpt);
}

// Token ids of the first `windows` eval windows, concatenated.
inline std::vector<int64_t> TinyLlamaEvalTokens(int64_t windows) {
  auto eval = safetensors::ReadSafetensorsFile(TinyLlamaDir() + "/eval.safetensors");
  EXPECT_THAT(eval, IsOk());
  for (const ir::Tensor& t : eval->tensors) {
    if (t.name != "input_ids") continue;
    auto ids = calibration::TokenIdsFromTensor(t, "eval.safetensors:input_ids");
    EXPECT_THAT(ids, IsOk());
    ids->resize(windows * kTinyLlamaWindow);
    return *ids;
  }
  ADD_FAILURE() << "eval.safetensors has no input_ids";
  return {};
}

// Perplexity of a (possibly compressed) checkpoint through the decoder graph.
inline double TinyLlamaPerplexity(const ir::Model& checkpoint, int64_t windows) {
  auto model = hf::BuildDecoderGraph(checkpoint);
  EXPECT_THAT(model, IsOk());
  runtime::InterpreterOptions io;
  io.num_threads = 2;
  auto interp = runtime::Interpreter::Create(*model, io);
  EXPECT_THAT(interp, IsOk());
  eval::PerplexityOptions po;
  po.window = kTinyLlamaWindow;
  po.windows_per_batch = 16;
  auto r = eval::ComputePerplexity(*interp, TinyLlamaEvalTokens(windows), po);
  EXPECT_THAT(r, IsOk());
  return r->perplexity;
}

}  // namespace slimpack::testing

#endif  // SLIMPACK_TESTS_TESTING_TINY_LLAMA_EVAL_H_
