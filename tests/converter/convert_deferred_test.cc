// Quantizing RTN-family weights as their shards are written
// (ConvertRequest::quantize_while_writing, quantize/deferred_weights.h) must
// not change a byte: every file of the artifact equals the one written after
// quantizing every weight first, and the -v lines state the same errors, for each algorithm that defers, on an HF checkpoint
// (row-major weights, read in row blocks) and an ONNX graph (MatMul weights
// stored transposed, quantized whole), at 1 and 2 threads.
#include <algorithm>
#include <fstream>
#include <map>
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
  std::string quant;
  std::string algo;
  bool asym = false;
  int64_t group = 0;
  std::vector<std::string> calib;
  std::string recipe;  // JSON, written to a file and passed as --recipe
};

// gtest prints a case by its name (test listings, failures).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Converts `c` to `out` and returns the -v lines.
std::vector<std::string> ConvertTo(const Case& c, const std::string& out, bool while_writing,
                                   int threads) {
  ConvertFlags f;
  f.input = c.input;
  f.output = out;
  f.quant = c.quant;
  f.algo = c.algo;
  f.asym = c.asym;
  f.group = c.group;
  f.calib = c.calib;
  f.threads = threads;
  f.verbose = true;
  if (!c.recipe.empty()) {
    f.recipe_path = out + ".recipe.json";
    std::ofstream(f.recipe_path) << c.recipe;
  }
  return testing::ConvertLogged(f, while_writing, c.name);
}

std::vector<std::string> TensorLines(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const std::string& l : lines) {
    if (l.rfind("quantize: ", 0) == 0 && l.find(" rel L2 ") != std::string::npos) {
      out.push_back(l);
    }
  }
  return out;
}

std::vector<Case> Cases() {
  const std::string llama = kRoot + "/examples/tiny-llama";
  const std::string calib = llama + "/calib_tokens.npy";
  return {
      {"int4_g32_asym_rtn", llama, "int4", "rtn", true, 32, {}, ""},
      {"int4_g128_imatrix", llama, "int4", "imatrix", false, 128, {calib}, ""},
      {"int4_g64_rtn_mse", llama, "int4", "rtn-mse", false, 64, {}, ""},
      {"int8_rtn", llama, "int8", "rtn", false, 0, {}, ""},
      {"int4_awq", llama, "int4", "awq", false, 128, {calib}, ""},
      // AWQ groups whose members are stored otherwise: k_proj as f16 (its
      // fold applied in place before writing), up_proj by int8 RTN (its
      // gate/up column scales and down's row divisors applied as read).
      {"awq_mixed_rules", llama, "", "", false, 0, {calib},
       R"({"quant": {"scheme": "int4-g32", "algorithm": "awq", "awq": {"grid": 4},
           "rules": [{"match": "k_proj", "scheme": "f16"},
                     {"match": "up_proj", "scheme": "int8", "algorithm": "rtn"}]}})"},
      {"cnn_int8", kRoot + "/examples/digits-cnn/model.onnx", "int8", "rtn", false, 0, {}, ""},
      {"encoder_int4", kRoot + "/tests/testdata/models/torch_encoder_block.onnx", "int4", "rtn",
       true, 32, {}, ""},
  };
}

// One test per case, so the sanitizer build's scheduler can run them on
// every core (together they were one 75 s test).
class ConvertDeferredTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConvertDeferredTest, SameArtifactAsQuantizingFirst) {
  const Case& c = GetParam();
  TempDir dir;
  const std::vector<std::string> first = ConvertTo(c, dir.File("first"), false, 2);
  const std::vector<std::string> late1 = ConvertTo(c, dir.File("late1"), true, 1);
  const std::vector<std::string> late2 = ConvertTo(c, dir.File("late2"), true, 2);
  const auto want = HashFiles(dir.File("first"));
  ASSERT_FALSE(want.empty()) << c.name;
  EXPECT_EQ(HashFiles(dir.File("late1")), want) << c.name;
  EXPECT_EQ(HashFiles(dir.File("late2")), want) << c.name;
  // The deferred runs did defer (the stage line says so); the first did not.
  auto says_deferred = [](const std::vector<std::string>& lines) {
    for (const std::string& l : lines) {
      // "(quantized as …)", or "(N of them quantized as …)" when a recipe
      // stores some weights otherwise.
      if (l.find("quantized as the shards are written)") != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_FALSE(says_deferred(first)) << c.name;
  EXPECT_TRUE(says_deferred(late1)) << c.name;
  EXPECT_TRUE(says_deferred(late2)) << c.name;
  // The -v lines of every tensor, errors included, in the same order (a
  // weight stored now, e.g. as f16, is reported before the deferred ones'
  // lines, which follow the write: then the same lines).
  std::vector<std::string> late_lines = TensorLines(late2), first_lines = TensorLines(first);
  if (!c.recipe.empty()) {
    std::sort(late_lines.begin(), late_lines.end());
    std::sort(first_lines.begin(), first_lines.end());
  }
  EXPECT_EQ(late_lines, first_lines) << c.name;
  EXPECT_FALSE(TensorLines(first).empty()) << c.name;
  // Each quantized weight's error is stated after its shard was written,
  // not a placeholder.
  for (const std::string& l : TensorLines(late2)) {
    if (l.find(" rtn") == std::string::npos && l.find(" imatrix") == std::string::npos &&
        l.find(" awq") == std::string::npos) {
      continue;
    }
    EXPECT_THAT(l, ::testing::Not(::testing::HasSubstr("rel L2 0 "))) << c.name;
    EXPECT_THAT(l, ::testing::Not(::testing::EndsWith("rel L2 0"))) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ConvertDeferredTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace slimpack::converter
