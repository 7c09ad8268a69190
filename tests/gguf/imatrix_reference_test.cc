// slimpack against llama.cpp's own importance-matrix tools, on the bundled
// tiny-llama (tests/testdata/gguf/imatrix/, made by
// scripts/fixtures/make_llama_imatrix_reference.sh from a llama.cpp build
// outside the repo):
//  - our imatrix (the interpreter's forward pass, mean x^2 per input column
//    of every linear layer) equals llama-imatrix's on the same 62 windows
//    within float rounding: an external reference for --algo imatrix;
//  - a GGUF export weighted by llama-imatrix's file holds exactly the tensor
//    bytes llama-quantize --imatrix writes from it.
#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "converter/convert_gguf.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/gguf/imatrix_file.h"
#include "formats/gguf/llama_names.h"
#include "formats/shard/writer/file_digest.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "quantize/importance_matrix.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tiny_llama_eval.h"

namespace slimpack {
namespace {

using ::slimpack::testing::IsOk;

const std::string kData = std::string(SLIMPACK_GGUF_TESTDATA_DIR) + "/imatrix";

TEST(ImatrixReferenceTest, OurImatrixEqualsLlamaImatrixOnTheSameWindows) {
  auto theirs = gguf::ReadImatrixFile(kData + "/tiny_llama.imatrix");
  ASSERT_THAT(theirs, IsOk());
  auto ours = quantize::ComputeImportanceMatrix(::slimpack::testing::TinyLlamaCheckpoint(),
                                                {kData + "/windows.npy"}, 1000, 2);
  ASSERT_THAT(ours, IsOk());
  EXPECT_EQ(ours->samples, 62);
  EXPECT_EQ(ours->rows, 62u * 64);
  // Every linear layer of both: 4 layers x 7 projections + lm_head
  // (llama-imatrix --process-output).
  ASSERT_EQ(ours->columns.size(), 29u);
  ASSERT_EQ(theirs->entries.size(), 29u);
  double worst = 0;
  std::string worst_at;
  int compared = 0;
  for (const auto& [hf_name, mine] : ours->columns) {
    const std::string name = gguf::GgufNameFromHf(hf_name);
    auto it = theirs->entries.find(name);
    ASSERT_NE(it, theirs->entries.end()) << hf_name << " -> " << name;
    EXPECT_EQ(it->second.ncall, 62) << name;  // one call per 64-token chunk
    const std::vector<float> ref = gguf::MeanSquares(it->second);
    ASSERT_EQ(ref.size(), mine.size()) << name;
    for (size_t j = 0; j < ref.size(); ++j) {
      const double rel = std::fabs(static_cast<double>(mine[j]) - ref[j]) / ref[j];
      if (rel > worst) worst = rel, worst_at = name + "[" + std::to_string(j) + "]";
    }
    ++compared;
  }
  EXPECT_EQ(compared, 29);
  std::printf("[ imatrix  ] largest relative difference vs llama-imatrix: %.3g at %s\n", worst,
              worst_at.c_str());
  // Both are f32 forward passes of the same model summed in different
  // orders (ggml's SIMD dot products, our fixed FMA chains; llama.cpp
  // accumulates the squares in float): measured 2.1e-5.
  EXPECT_LT(worst, 1e-4) << worst_at;
}

std::map<std::string, std::pair<uint32_t, std::string>> Digests(const std::string& gguf_path) {
  std::map<std::string, std::pair<uint32_t, std::string>> out;
  auto file = gguf::OpenGgufFile(gguf_path);
  EXPECT_THAT(file, IsOk());
  if (!file.ok()) return out;
  for (const gguf::TensorInfo& t : file->tensors) {
    out[std::string(t.name)] = {t.type, shard_writer::Sha256Stream::HashHex(t.data, t.n_bytes)};
  }
  return out;
}

class LlamaQuantizeBytesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaQuantizeBytesTest, GgufWithLlamaImatrixHasLlamaQuantizeTensorBytes) {
  const std::string preset = GetParam();
  char tmpl[] = "/tmp/imatrix_reference_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  converter::GgufConvertRequest req;
  req.input = ::slimpack::testing::TinyLlamaDir();
  req.output = dir + "/tiny.gguf";
  req.preset = preset;
  req.threads = 2;
  req.imatrix_path = kData + "/tiny_llama.imatrix";
  auto written = converter::ConvertToGguf(req);
  ASSERT_THAT(written, IsOk());
  // The 22 q5_0/q5_1 matrices (rows of 128 fall back from the K types);
  // not the token embedding (no matmul reads it, so no imatrix entry), the
  // q8_0 output and v projections (ggml's q8_0 takes no weights) or the f16
  // ffn_down (344 columns fit no block).
  EXPECT_EQ(written->with_importance, 22);

  std::ifstream in(kData + "/llama_quantize_" + preset + ".json");
  const nlohmann::json want = nlohmann::json::parse(in);
  const auto got = Digests(req.output);
  ASSERT_EQ(got.size(), want.size());
  int same = 0;
  for (const auto& [name, w] : want.items()) {
    auto it = got.find(name);
    ASSERT_NE(it, got.end()) << name;
    EXPECT_EQ(it->second.first, w["type"].get<uint32_t>()) << name;
    EXPECT_EQ(it->second.second, w["sha256"].get<std::string>()) << name;
    if (it->second.second == w["sha256"].get<std::string>()) ++same;
  }
  EXPECT_EQ(same, 39);
  std::system(("rm -rf " + dir).c_str());
}

// The presets whose weighted types llama-quantize writes for this model
// and slimpack does too (its q4_0..q5_1 stop at ffn_down's 344 columns; for
// q2_k/q3_k it falls back to IQ4_NL, a type slimpack does not write; q6_k
// falls back to q8_0, which takes no imatrix). Rows of 128 fall back from
// the K types to q5_0/q5_1: the K types' weighted search is checked
// against ggml's bytes in ggml_blocks_test.
INSTANTIATE_TEST_SUITE_P(Presets, LlamaQuantizeBytesTest, ::testing::Values("q4_k_m", "q5_k_m"));

}  // namespace
}  // namespace slimpack
