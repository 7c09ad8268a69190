// Calibration table JSON: exact round trip, atomic write, and one specific
// error per kind of bad table.
#include "calibration/calibration_table.h"

#include <dirent.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/calibration/test_data.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::calibration {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kSha(64, 'a');

CalibrationTable SampleTable() {
  CalibrationTable t;
  t.model_name = "model.onnx";
  t.model_sha256 = kSha;
  t.method.method = RangeMethod::kPercentile;
  t.method.per_channel = true;
  t.method.percentile = 99.9;
  t.samples = 450;
  t.runs = 15;
  t.files = {{"eval.safetensors", 119440, std::string(64, 'b')}};
  TensorCalibration tc;
  tc.producer = "conv1";
  tc.op_type = "Conv";
  tc.range.elements = 1000;
  tc.range.nonfinite = 2;
  tc.range.runs = 15;
  tc.range.min = -0.1234567890123;
  tc.range.max = 3.0e-7;
  tc.range.lo = -0.1;
  tc.range.hi = 2.5e-7;
  tc.range.histogram = {4096, 0.25, 0.01, 0.1, 0.2, 0.24, 0.125};
  tc.range.channel_axis = 1;
  tc.range.channel_ranges = {{-0.1, 0.2}, {0, 1.0 / 3}};
  tc.range.last_dims = {32, 16, 8, 8};
  t.tensors["/conv1/Conv_output_0"] = tc;
  LinearCalibration lc;
  lc.layer = {"fc", "Gemm", "flat", "fc.weight", 2, false};
  lc.rows = 3;
  lc.mean_abs = {0.5, 1.0 / 7};
  lc.mean_sq = {0.25, 2};
  lc.xtx = {1, 2, 2, 4.000000000000001};
  t.linears["fc"] = lc;
  return t;
}

TEST(CalibrationTableTest, RoundTripsExactly) {
  const CalibrationTable t = SampleTable();
  const std::string text = SerializeCalibrationTable(t);
  auto back = ParseCalibrationTable(text, "calib.json");
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_EQ(SerializeCalibrationTable(*back), text);
  const ObservedRange& r = back->tensors.at("/conv1/Conv_output_0").range;
  EXPECT_EQ(r.min, -0.1234567890123);
  EXPECT_EQ(r.channel_ranges[1].second, 1.0 / 3);
  EXPECT_EQ(back->linears.at("fc").xtx[3], 4.000000000000001);
  EXPECT_EQ(back->linears.at("fc").layer.node, "fc");
  EXPECT_EQ(back->method.method, RangeMethod::kPercentile);
  EXPECT_EQ(back->files[0].bytes, 119440u);
}

std::string TempDir() { return calibration::test_data::NewTempDir("calib_table"); }

TEST(CalibrationTableTest, WriteIsAtomicAndLoadChecksModelDigest) {
  const std::string dir = TempDir();
  const std::string path = dir + "/calib.json";
  ASSERT_THAT(WriteCalibrationTable(SampleTable(), path), IsOk());
  int entries = 0;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) entries += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(entries, 1);  // no temp file left behind
  EXPECT_THAT(LoadCalibrationTable(path, kSha).status(), IsOk());
  EXPECT_THAT(LoadCalibrationTable(path, std::string(64, 'c')).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("calibrated for model 'model.onnx' sha256 " + kSha),
                             HasSubstr("this model's sha256 is cccc"))));
  EXPECT_THAT(LoadCalibrationTable(dir + "/nope.json").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope.json")));
}

// Applies `edit` to the sample table's JSON and parses the result.
absl::Status ParseEdited(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(SerializeCalibrationTable(SampleTable()));
  edit(j);
  return ParseCalibrationTable(j.dump(), "calib.json").status();
}

TEST(CalibrationTableTest, BadTablesGetSpecificErrors) {
  EXPECT_THAT(ParseCalibrationTable("{", "calib.json").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("calib.json: not valid JSON")));
  EXPECT_THAT(ParseEdited([](auto& j) { j["version"] = 2; }),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("calibration table version 2 (supported: 1)")));
  EXPECT_THAT(ParseEdited([](auto& j) { j["format"] = "other"; }),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("is not a calibration table")));
  EXPECT_THAT(ParseEdited([](auto& j) { j["tensors"]["/conv1/Conv_output_0"].erase("range"); }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("calib.json: $.tensors['/conv1/Conv_output_0'].range: missing field")));
  EXPECT_THAT(ParseEdited([](auto& j) { j["tensors"]["/conv1/Conv_output_0"]["range"] = {2, 1}; }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lo 2.000000 > hi 1.000000")));
  EXPECT_THAT(ParseEdited([](auto& j) { j["dataset"]["samples"] = "many"; }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("$.dataset.samples: expected integer, found string")));
  EXPECT_THAT(ParseEdited([](auto& j) { j["model"]["sha256"] = "xyz"; }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("$.model.sha256: expected 64 lowercase hex digits")));
  EXPECT_THAT(ParseEdited([](auto& j) { j["method"]["name"] = "magic"; }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("$.method.name: unknown calibration method 'magic'")));
  EXPECT_THAT(ParseEdited([](auto& j) { j["linears"]["fc"]["xtx"] = {1, 2, 3}; }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("$.linears['fc'].xtx: 3 entries, expected 4 (in_features^2)")));
  EXPECT_THAT(ParseEdited([](auto& j) { j.erase("linears"); }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("$.linears: missing field")));
}

}  // namespace
}  // namespace slimpack::calibration
