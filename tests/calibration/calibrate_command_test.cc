// End to end on examples/digits-cnn: `RunCalibrate` with eval.safetensors,
// checked against ranges computed directly from the data, bit-identical
// tables at 1 and 4 threads, the coverage check, and CLI error paths.
#include "cli/calibrate_command.h"

#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "calibration/calibrator.h"
#include "cli/exit_codes.h"
#include "formats/import.h"
#include "formats/safetensors/safetensors_reader.h"
#include "formats/safetensors/safetensors_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/calibration/test_data.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::cli {
namespace {

using ::slimpack::testing::IsOk;

const std::string kModel = std::string(SLIMPACK_SOURCE_DIR) + "/examples/digits-cnn/model.onnx";
const std::string kEval = std::string(SLIMPACK_SOURCE_DIR) + "/examples/digits-cnn/eval.safetensors";

std::string TempDir() { return calibration::test_data::NewTempDir("calibrate_cmd"); }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CalibrateOptions DigitsOptions(const std::string& out) {
  CalibrateOptions o;
  o.model = kModel;
  o.data = {kEval};
  o.input_map = {"input=inputs"};
  o.output = out;
  return o;
}

// An HF checkpoint calibrates through its decoder graph, fed token ids.
TEST(CalibrateCommandTest, TokenIdsCalibrateTheTinyLlamaDecoder) {
  const std::string out = TempDir() + "/calib.json";
  CalibrateOptions o;
  o.model = std::string(SLIMPACK_SOURCE_DIR) + "/examples/tiny-llama";
  o.data = {std::string(SLIMPACK_SOURCE_DIR) + "/examples/tiny-llama/calib_tokens.npy"};
  o.output = out;
  ASSERT_EQ(RunCalibrate(o), kExitOk);
  const std::string json = ReadAll(out);
  // 64 calibration windows, ranges for the decoder's inner tensors (named
  // after the checkpoint's modules) and the logits, and linear-layer input
  // statistics (lm_head among them).
  EXPECT_NE(json.find("\"samples\": 64"), std::string::npos) << json.substr(0, 400);
  EXPECT_NE(json.find("\"model.layers.0.input_layernorm/"), std::string::npos);
  EXPECT_NE(json.find("\"logits\": {"), std::string::npos);
  EXPECT_NE(json.find("\"lm_head/Gemm"), std::string::npos);
}

TEST(CalibrateCommandTest, MinMaxOnDigitsMatchesTheData) {
  const std::string out = TempDir() + "/calib.json";
  ASSERT_EQ(RunCalibrate(DigitsOptions(out)), kExitOk);
  auto model = formats::ImportModel(kModel);
  ASSERT_THAT(model.status(), IsOk());
  auto digest = calibration::ModelDigest(*model);
  ASSERT_THAT(digest.status(), IsOk());
  auto table = calibration::LoadCalibrationTable(out, *digest);
  ASSERT_THAT(table.status(), IsOk());
  EXPECT_EQ(table->samples, 450);
  EXPECT_EQ(table->runs, 15);  // 450 rows in runs of 32
  ASSERT_EQ(table->files.size(), 1u);
  EXPECT_EQ(table->files[0].name, "eval.safetensors");

  // The input's range equals min/max of the eval images read directly.
  auto st = safetensors::ReadSafetensorsFile(kEval);
  ASSERT_THAT(st.status(), IsOk());
  const ir::Tensor* images = nullptr;
  for (const auto& t : st->tensors) if (t.name == "inputs") images = &t;
  ASSERT_NE(images, nullptr);
  const float* px = reinterpret_cast<const float*>(images->data.data());
  const auto [mn, mx] = std::minmax_element(px, px + 450 * 64);
  const auto& in = table->tensors.at("input").range;
  EXPECT_EQ(in.min, *mn);
  EXPECT_EQ(in.max, *mx);
  EXPECT_EQ(in.elements, 450u * 64);
  EXPECT_EQ(table->tensors.at("/Relu_output_0").range.min, 0);
  EXPECT_EQ(table->tensors.at("/Relu_output_0").producer.empty(), false);
  EXPECT_EQ(table->tensors.count("logits"), 1u);
  // The Gemm's input statistics: one row per image, 32 features.
  ASSERT_EQ(table->linears.size(), 1u);
  const auto& fc = table->linears.begin()->second;
  EXPECT_EQ(fc.layer.in_features, 32);
  EXPECT_EQ(fc.rows, 450u);
  EXPECT_TRUE(fc.xtx.empty());
}

TEST(CalibrateCommandTest, TablesAreBitIdenticalAcrossThreadCounts) {
  const std::string dir = TempDir();
  CalibrateOptions o = DigitsOptions(dir + "/t1.json");
  o.method = "entropy";
  o.per_channel = true;
  o.xtx = true;
  o.threads = 1;
  ASSERT_EQ(RunCalibrate(o), kExitOk);
  o.output = dir + "/t4.json";
  o.threads = 4;
  ASSERT_EQ(RunCalibrate(o), kExitOk);
  const std::string a = ReadAll(dir + "/t1.json"), b = ReadAll(dir + "/t4.json");
  EXPECT_GT(a.size(), 1000u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a.find("\"xtx\""), std::string::npos);
  EXPECT_NE(a.find("\"channel_ranges\""), std::string::npos);
}

TEST(CalibrateCommandTest, ClippingMethodsStayInsideMinMax) {
  const std::string dir = TempDir();
  std::map<std::string, calibration::CalibrationTable> tables;
  for (const char* m : {"minmax", "percentile", "entropy", "mse"}) {
    CalibrateOptions o = DigitsOptions(dir + "/" + m + ".json");
    o.method = m;
    ASSERT_EQ(RunCalibrate(o), kExitOk) << m;
    auto t = calibration::LoadCalibrationTable(o.output);
    ASSERT_THAT(t.status(), IsOk());
    tables.emplace(m, *std::move(t));
  }
  bool some_clipped = false;
  for (const auto& [name, mm] : tables.at("minmax").tensors) {
    for (const char* m : {"percentile", "entropy", "mse"}) {
      const auto& r = tables.at(m).tensors.at(name).range;
      EXPECT_GE(r.lo, mm.range.lo) << m << " " << name;
      EXPECT_LE(r.hi, mm.range.hi) << m << " " << name;
      some_clipped |= r.hi < mm.range.hi;
    }
  }
  EXPECT_TRUE(some_clipped);
}

TEST(CalibrateCommandTest, CoverageFlagsTensorsOutsideASmallCalibrationSet) {
  // Calibrate on the first 16 images, then check on all 450.
  auto st = safetensors::ReadSafetensorsFile(kEval);
  ASSERT_THAT(st.status(), IsOk());
  ir::Tensor first;
  for (const auto& t : st->tensors) if (t.name == "inputs") first = t;
  first.name = "input";
  first.dims[0] = 16;
  first.data = ir::TensorData::View(nullptr, first.data.data(), 16 * 64 * 4);
  const std::string dir = TempDir();
  ASSERT_THAT(safetensors::WriteSafetensorsFile(dir + "/small.safetensors", {first}), IsOk());

  auto model = formats::ImportModel(kModel);
  ASSERT_THAT(model.status(), IsOk());
  const auto inputs = calibration::FeedInputs(model->graph);
  auto small = calibration::Dataset::Open({dir + "/small.safetensors"}, inputs, {});
  ASSERT_THAT(small.status(), IsOk());
  auto table = calibration::Calibrate(*model, *small, {});
  ASSERT_THAT(table.status(), IsOk());
  EXPECT_EQ(table->samples, 16);

  // The same data is fully covered by a min/max table.
  small->Rewind();
  auto same = calibration::CheckCoverage(*model, *table, *small);
  ASSERT_THAT(same.status(), IsOk());
  EXPECT_TRUE(same->empty());

  calibration::DatasetOptions rename;
  rename.rename["input"] = "inputs";
  auto all = calibration::Dataset::Open({kEval}, inputs, rename);
  ASSERT_THAT(all.status(), IsOk());
  auto issues = calibration::CheckCoverage(*model, *table, *all, 2);
  ASSERT_THAT(issues.status(), IsOk());
  ASSERT_FALSE(issues->empty());
  for (const auto& c : *issues) {
    EXPECT_TRUE(c.observed_min < c.calibrated_lo || c.observed_max > c.calibrated_hi) << c.tensor;
    EXPECT_GT(c.fraction_outside, 0);
    EXPECT_LT(c.fraction_outside, 0.5);
    EXPECT_EQ(c.fraction_outside, static_cast<double>(c.outside) / c.elements);
  }
}

TEST(CalibrateCommandTest, RandomDataIsReproducibleBySeed) {
  const std::string dir = TempDir();
  CalibrateOptions o;
  o.model = kModel;
  o.random_samples = 4;
  o.seed = 9;
  o.method = "percentile";
  o.output = dir + "/a.json";
  ASSERT_EQ(RunCalibrate(o), kExitOk);
  o.output = dir + "/b.json";
  ASSERT_EQ(RunCalibrate(o), kExitOk);
  EXPECT_EQ(ReadAll(dir + "/a.json"), ReadAll(dir + "/b.json"));
  auto t = calibration::LoadCalibrationTable(dir + "/a.json");
  ASSERT_THAT(t.status(), IsOk());
  EXPECT_TRUE(t->random_data);
  EXPECT_EQ(t->seed, 9u);
  EXPECT_EQ(t->samples, 4);
}

TEST(CalibrateCommandTest, UsageAndInputErrors) {
  const std::string dir = TempDir();
  CalibrateOptions none;
  none.model = kModel;
  none.output = dir + "/x.json";
  EXPECT_EQ(RunCalibrate(none), kExitUsage);  // neither --data nor --calib-random
  CalibrateOptions missing_input = DigitsOptions(dir + "/x.json");
  missing_input.input_map.clear();  // eval.safetensors names its array "inputs"
  EXPECT_EQ(RunCalibrate(missing_input), kExitInputError);
  CalibrateOptions bad_method = DigitsOptions(dir + "/x.json");
  bad_method.method = "kl";
  EXPECT_EQ(RunCalibrate(bad_method), kExitInputError);
  std::ifstream probe(dir + "/x.json");
  EXPECT_FALSE(probe.good());  // nothing written on failure
}

}  // namespace
}  // namespace slimpack::cli
