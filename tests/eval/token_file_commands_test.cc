// Token files of either integer width through the commands that read them
// (issue 16): convert's --calib, `calibrate` and `report` take an int32
// token file exactly as its int64 twin, and a negative (or out-of-vocabulary)
// id is refused naming the file, its position and its value instead of
// wrapping around in the embedding Gather. All on examples/tiny-llama, with
// a few calibration rows to stay cheap.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "calibration/calibration_table.h"
#include "cli/calibrate_command.h"
#include "cli/convert_command.h"
#include "cli/exit_codes.h"
#include "cli/report_command.h"
#include "formats/numpy/numpy_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::cli {
namespace {

using ::slimpack::safetensors::testing::ReadWholeFile;
using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::testing::IsOk;
using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kLlama = SLIMPACK_TINY_LLAMA_DIR;

// Token windows, row-major.
struct Tokens {
  std::vector<int64_t> ids;
  int64_t rows = 0, cols = 0;
  int64_t& at(int64_t r, int64_t c) { return ids[r * cols + c]; }
};

// The bundled calibration windows (calib_tokens.npy, i64 [64, 64]).
Tokens BundledCalibTokens() {
  Tokens out;
  auto t = numpy::ReadNpy(kLlama + "/calib_tokens.npy");
  EXPECT_THAT(t, IsOk());
  if (!t.ok() || t->dtype != ir::DType::kI64 || t->dims.size() != 2) {
    ADD_FAILURE() << "calib_tokens.npy is not i64 [rows, cols]";
    return out;
  }
  out.rows = t->dims[0];
  out.cols = t->dims[1];
  out.ids.resize(out.rows * out.cols);
  std::memcpy(out.ids.data(), t->data.data(), out.ids.size() * 8);
  return out;
}

// The first `rows` rows of `tokens` as an .npy of `dtype` (i64 or i32) at
// `path` (its directory is created).
void WriteTokens(const std::string& path, const Tokens& tokens, int64_t rows, ir::DType dtype) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  const size_t width = dtype == ir::DType::kI64 ? 8 : 4;
  const size_t n = static_cast<size_t>(rows * tokens.cols);
  std::vector<uint8_t> bytes(n * width);
  for (size_t i = 0; i < n; ++i) {
    if (dtype == ir::DType::kI64) {
      std::memcpy(bytes.data() + 8 * i, &tokens.ids[i], 8);
    } else {
      const int32_t v = static_cast<int32_t>(tokens.ids[i]);
      ASSERT_EQ(v, tokens.ids[i]);
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    }
  }
  ir::Tensor t;
  t.name = "input_ids";
  t.dtype = dtype;
  t.dims = {rows, tokens.cols};
  t.data = ir::TensorData::Owned(std::move(bytes));
  ASSERT_THAT(numpy::WriteNpy(path, t), IsOk());
}

struct Outcome {
  int rc;
  std::string err;
};

template <typename Fn>
Outcome Capture(Fn fn) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = fn();
  ::testing::internal::GetCapturedStdout();
  return {rc, ::testing::internal::GetCapturedStderr()};
}

// GPTQ needs calibration; two samples keep it cheap (as the CLI test does).
Outcome ConvertGptq(const std::string& calib, const std::string& out) {
  ConvertOptions c;
  c.input = kLlama;
  c.output = out;
  c.quant = "int4-g32-asym";
  c.algo = "gptq";
  c.calib = {calib};
  c.calib_samples = 2;
  c.threads = 2;
  return Capture([&] { return RunConvert(c); });
}

// Relative path -> bytes of every regular file under `dir`.
std::map<std::string, std::string> DirFiles(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    out[std::filesystem::relative(e.path(), dir).string()] = ReadWholeFile(e.path().string());
  }
  return out;
}

// manifest.json without what names the calibration file itself
// (producer.calibration holds its SHA-256, which differs between an i32 and
// an i64 file of the same ids) and the self-hash that covers it.
std::string ManifestWithoutCalibrationDigest(const std::string& text) {
  nlohmann::json m = nlohmann::json::parse(text);
  m["producer"].erase("calibration");
  m.erase("manifest_sha256");
  return m.dump();
}

std::vector<std::string> Keys(const std::map<std::string, std::string>& m) {
  std::vector<std::string> k;
  for (const auto& [name, bytes] : m) k.push_back(name);
  return k;
}

TEST(TokenFileCommandsTest, GptqWithInt32CalibrationIsByteIdenticalToInt64) {
  TempDir dir;
  const Tokens tokens = BundledCalibTokens();
  ASSERT_GE(tokens.rows, 4);
  // Same base name in both directories, so only the dtype differs.
  WriteTokens(dir.File("i64/calib.npy"), tokens, tokens.rows, ir::DType::kI64);
  WriteTokens(dir.File("i32/calib.npy"), tokens, tokens.rows, ir::DType::kI32);
  const Outcome wide = ConvertGptq(dir.File("i64/calib.npy"), dir.File("a"));
  ASSERT_EQ(wide.rc, kExitOk) << wide.err;
  const Outcome narrow = ConvertGptq(dir.File("i32/calib.npy"), dir.File("b"));
  ASSERT_EQ(narrow.rc, kExitOk) << narrow.err;

  const auto a = DirFiles(dir.File("a")), b = DirFiles(dir.File("b"));
  ASSERT_EQ(a.count("manifest.json"), 1u);
  EXPECT_NE(a.at("manifest.json").find("gptq"), std::string::npos);
  ASSERT_EQ(Keys(a), Keys(b));
  for (const auto& [name, bytes] : a) {
    if (name == "manifest.json") continue;
    EXPECT_TRUE(bytes == b.at(name)) << name << " differs";
  }
  EXPECT_EQ(ManifestWithoutCalibrationDigest(a.at("manifest.json")),
            ManifestWithoutCalibrationDigest(b.at("manifest.json")));
  EXPECT_NE(a.at("manifest.json"), b.at("manifest.json"));  // the digests differ

  // Control: other calibration rows give other bytes, so the equality above
  // says the i32 file fed the same ids, not that the data was ignored.
  Tokens other = tokens;
  std::rotate(other.ids.begin(), other.ids.begin() + 2 * other.cols, other.ids.end());
  WriteTokens(dir.File("other/calib.npy"), other, other.rows, ir::DType::kI32);
  const Outcome moved = ConvertGptq(dir.File("other/calib.npy"), dir.File("c"));
  ASSERT_EQ(moved.rc, kExitOk) << moved.err;
  const auto c = DirFiles(dir.File("c"));
  ASSERT_EQ(Keys(a), Keys(c));
  bool differs = false;
  for (const auto& [name, bytes] : a) differs |= name != "manifest.json" && bytes != c.at(name);
  EXPECT_TRUE(differs);  // a shard, not only the recorded digest
}

TEST(TokenFileCommandsTest, ConvertRefusesNegativeAndOutOfVocabularyCalibrationIds) {
  TempDir dir;
  Tokens tokens = BundledCalibTokens();
  ASSERT_GE(tokens.rows, 4);
  Tokens negative = tokens;
  negative.at(1, 3) = -7;
  WriteTokens(dir.File("neg.npy"), negative, 4, ir::DType::kI32);
  const Outcome neg = ConvertGptq(dir.File("neg.npy"), dir.File("x"));
  EXPECT_EQ(neg.rc, kExitInputError);
  EXPECT_THAT(neg.err, AllOf(HasSubstr("neg.npy"), HasSubstr("token id at [1, 3] is -7")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("x")));
  // config.json's vocab_size (258) bounds the ids at convert's read site.
  Tokens big = tokens;
  big.at(0, 5) = 258;
  WriteTokens(dir.File("big.npy"), big, 4, ir::DType::kI64);
  const Outcome over = ConvertGptq(dir.File("big.npy"), dir.File("y"));
  EXPECT_EQ(over.rc, kExitInputError);
  EXPECT_THAT(over.err,
              AllOf(HasSubstr("big.npy"),
                    HasSubstr("token id at [0, 5] is 258, outside the vocabulary [0, 258)")));
}

TEST(TokenFileCommandsTest, CalibrateTakesInt32TokenIdsAsInt64) {
  TempDir dir;
  Tokens tokens = BundledCalibTokens();
  ASSERT_GE(tokens.rows, 4);
  WriteTokens(dir.File("i64/calib.npy"), tokens, 4, ir::DType::kI64);
  WriteTokens(dir.File("i32/calib.npy"), tokens, 4, ir::DType::kI32);
  auto calibrate = [&](const std::string& data, const std::string& out) {
    CalibrateOptions o;
    o.model = kLlama;
    o.data = {data};
    o.output = out;
    return Capture([&] { return RunCalibrate(o); });
  };
  const Outcome wide = calibrate(dir.File("i64/calib.npy"), dir.File("i64.json"));
  ASSERT_EQ(wide.rc, kExitOk) << wide.err;
  const Outcome narrow = calibrate(dir.File("i32/calib.npy"), dir.File("i32.json"));
  ASSERT_EQ(narrow.rc, kExitOk) << narrow.err;
  auto a = calibration::LoadCalibrationTable(dir.File("i64.json"));
  auto b = calibration::LoadCalibrationTable(dir.File("i32.json"));
  ASSERT_THAT(a.status(), IsOk());
  ASSERT_THAT(b.status(), IsOk());
  EXPECT_EQ(a->samples, 4);
  EXPECT_GT(a->tensors.size(), 10u);
  // The data-file digests differ (the bytes do); every range must not.
  a->files.clear();
  b->files.clear();
  EXPECT_EQ(calibration::SerializeCalibrationTable(*a),
            calibration::SerializeCalibrationTable(*b));

  tokens.at(1, 3) = -7;
  WriteTokens(dir.File("neg.npy"), tokens, 4, ir::DType::kI32);
  const Outcome neg = calibrate(dir.File("neg.npy"), dir.File("neg.json"));
  EXPECT_EQ(neg.rc, kExitInputError);
  EXPECT_THAT(neg.err, AllOf(HasSubstr("neg.npy"), HasSubstr("token id at [1, 3] is -7")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("neg.json")));
}

TEST(TokenFileCommandsTest, ReportTakesInt32TokenIds) {
  TempDir dir;
  Tokens tokens = BundledCalibTokens();
  ASSERT_GE(tokens.rows, 2);
  WriteTokens(dir.File("i32.npy"), tokens, 2, ir::DType::kI32);
  auto report = [&](const std::string& data, const std::string& out) {
    ReportCommandOptions o;
    o.reference = kLlama;
    o.candidate = kLlama;
    o.data = {data};
    o.output = out;
    o.max_runs = 1;
    o.sensitivity_runs = 0;
    o.fallback_layers = 0;
    return Capture([&] { return RunReport(o); });
  };
  const Outcome ok = report(dir.File("i32.npy"), dir.File("report"));
  ASSERT_EQ(ok.rc, kExitOk) << ok.err;
  EXPECT_TRUE(std::filesystem::exists(dir.File("report/report.json")));

  tokens.at(1, 3) = -7;
  WriteTokens(dir.File("neg.npy"), tokens, 2, ir::DType::kI32);
  const Outcome neg = report(dir.File("neg.npy"), dir.File("neg"));
  EXPECT_EQ(neg.rc, kExitInputError);
  EXPECT_THAT(neg.err, AllOf(HasSubstr("neg.npy"), HasSubstr("token id at [1, 3] is -7")));
}

}  // namespace
}  // namespace slimpack::cli
