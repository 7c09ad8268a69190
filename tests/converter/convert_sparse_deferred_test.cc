// Sparsified weights made as their shards are written (convert with
// --sparsity and no quantizer: prune/sparsify.h SparsifyOptions::defer, the
// writer's ProduceSparse) must not change a byte: every file of the
// artifact equals the one written after sparsifying every weight first, at
// 1 and 2 threads, for 2:4 (packed) and unstructured patterns, magnitude and
// wanda, row-major checkpoint weights (read in row blocks) and ONNX weights
// (MatMul B stored transposed, Conv kernels), with a --dtype cast. A sparse
// quantized conversion, which quantizes before writing, gives the same
// artifact either way (it used to crash when quantizing while writing).
#include <ostream>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/convert_request.h"
#include "tests/converter/convert_logged.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shard/writer/writer_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::converter {
namespace {

using ::slimpack::shard_writer::testing::HashFiles;
using ::slimpack::testing::TempDir;

const std::string kRoot = SLIMPACK_SOURCE_DIR;

struct Case {
  std::string name;
  std::string input;
  std::string ratio;
  std::string pattern;
  std::string criterion;
  std::vector<std::string> calib;
  std::string dtype;
  std::string quant;  // set: quantized after sparsifying (nothing deferred)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Converts `c` to `out`; returns the log lines.
std::vector<std::string> ConvertTo(const Case& c, const std::string& out, bool while_writing,
                                   int threads) {
  ConvertFlags f;
  f.input = c.input;
  f.output = out;
  f.sparsity = c.ratio;
  f.sparsity_pattern = c.pattern;
  f.sparsity_criterion = c.criterion;
  f.calib = c.calib;
  f.dtype = c.dtype;
  f.quant = c.quant;
  if (!c.quant.empty()) f.group = 32;
  f.threads = threads;
  return testing::ConvertLogged(f, while_writing, c.name);
}

// The sparsify stage's summary line.
std::string SparsifyLine(const std::vector<std::string>& lines) {
  for (const std::string& l : lines) {
    if (l.rfind("sparsify: ", 0) == 0 && l.find(" weights zero ") != std::string::npos) return l;
  }
  return "";
}

std::vector<Case> Cases() {
  const std::string llama = kRoot + "/examples/tiny-llama";
  const std::string calib = llama + "/calib_tokens.npy";
  const std::string cnn = kRoot + "/examples/digits-cnn/model.onnx";
  const std::string encoder = kRoot + "/tests/testdata/models/torch_encoder_block.onnx";
  return {
      {"llama_2of4_magnitude", llama, "", "2:4", "", {}, "", ""},
      {"llama_2of4_wanda_bf16", llama, "", "2:4", "wanda", {calib}, "bf16", ""},
      {"llama_unstructured_wanda", llama, "0.6", "", "wanda", {calib}, "", ""},
      {"llama_unstructured_f16", llama, "0.3", "", "", {}, "f16", ""},
      {"cnn_2of4", cnn, "", "2:4", "", {}, "", ""},
      {"encoder_2of4", encoder, "", "2:4", "", {}, "", ""},
      {"encoder_unstructured", encoder, "0.5", "", "", {}, "", ""},
      {"llama_2of4_int4", llama, "", "2:4", "", {}, "", "int4"},
  };
}

class ConvertSparseDeferredTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConvertSparseDeferredTest, SameArtifactAsSparsifyingFirst) {
  const Case& c = GetParam();
  TempDir dir;
  const std::vector<std::string> first = ConvertTo(c, dir.File("first"), false, 2);
  const std::vector<std::string> late1 = ConvertTo(c, dir.File("late1"), true, 1);
  const std::vector<std::string> late2 = ConvertTo(c, dir.File("late2"), true, 2);
  const auto want = HashFiles(dir.File("first"));
  ASSERT_FALSE(want.empty()) << c.name;
  EXPECT_EQ(HashFiles(dir.File("late1")), want) << c.name;
  EXPECT_EQ(HashFiles(dir.File("late2")), want) << c.name;
  // The same stage statistics; the deferred runs say they deferred, unless
  // a quantizer followed.
  const std::string says = " (sparsified again as the shards are written)";
  ASSERT_THAT(SparsifyLine(first), ::testing::HasSubstr(" weights zero ")) << c.name;
  EXPECT_THAT(SparsifyLine(first), ::testing::Not(::testing::HasSubstr(says))) << c.name;
  for (const auto* late : {&late1, &late2}) {
    if (c.quant.empty()) {
      EXPECT_EQ(SparsifyLine(*late), SparsifyLine(first) + says) << c.name;
    } else {
      EXPECT_EQ(SparsifyLine(*late), SparsifyLine(first)) << c.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, ConvertSparseDeferredTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace slimpack::converter
