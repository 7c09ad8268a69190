// What --progress prints for one event: the terminal line and the JSON
// object, with rate and ETA only once they can be computed; which modes
// print at all.
#include "cli/progress_printer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace slimpack::cli {
namespace {

using support::ProgressEvent;

TEST(ProgressPrinterTest, TextLineAddsRateAndEtaOnceAUnitIsDone) {
  EXPECT_EQ(ProgressText({"gptq", 0, 5, "layers", ""}, 0.0), "gptq: 0/5 layers");
  EXPECT_EQ(ProgressText({"calibration", 2, 8, "runs", "gptq layer 3"}, 1.0),
            "calibration (gptq layer 3): 2/8 runs, 2.00 runs/s, ETA 3 s");
  // ETA rounds up: 1 left at 0.75/s is 1.33 s.
  EXPECT_EQ(ProgressText({"gptq", 3, 4, "layers", "gptq layer 2"}, 4.0),
            "gptq (gptq layer 2): 3/4 layers, 0.75 layers/s, ETA 2 s");
  // Unknown total: a count and a rate, no ETA.
  EXPECT_EQ(ProgressText({"write", 3, 0, "files", ""}, 2.0), "write: 3 files, 1.50 files/s");
  // Done in no measurable time: no rate.
  EXPECT_EQ(ProgressText({"write", 1, 3, "files", "shard-00000.bin"}, 0.0),
            "write (shard-00000.bin): 1/3 files");
}

TEST(ProgressPrinterTest, JsonLineCarriesTheSameNumbers) {
  const nlohmann::json j =
      nlohmann::json::parse(ProgressJson({"calibration", 2, 8, "runs", "imatrix"}, 1.0));
  EXPECT_EQ(j["stage"], "calibration");
  EXPECT_EQ(j["context"], "imatrix");
  EXPECT_EQ(j["done"], 2);
  EXPECT_EQ(j["total"], 8);
  EXPECT_EQ(j["unit"], "runs");
  EXPECT_DOUBLE_EQ(j["elapsed_s"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["rate_per_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["eta_s"].get<double>(), 3.0);
  EXPECT_EQ(j.size(), 8u);

  const nlohmann::json start = nlohmann::json::parse(ProgressJson({"gptq", 0, 5, "layers", ""}, 0.0));
  EXPECT_FALSE(start.contains("context"));
  EXPECT_FALSE(start.contains("rate_per_s"));
  EXPECT_FALSE(start.contains("eta_s"));
  EXPECT_EQ(start["done"], 0);
}

TEST(ProgressPrinterTest, OnlyModesThatPrintHandOutASink) {
  EXPECT_EQ(ParseProgressMode("auto"), ProgressMode::kAuto);
  EXPECT_EQ(ParseProgressMode("json"), ProgressMode::kJson);
  EXPECT_EQ(ParseProgressMode("none"), ProgressMode::kNone);
  // auto draws on a terminal only: CI logs stay free of carriage returns.
  EXPECT_TRUE(ProgressPrinter(ProgressMode::kAuto, true).Sink() != nullptr);
  EXPECT_TRUE(ProgressPrinter(ProgressMode::kAuto, false).Sink() == nullptr);
  EXPECT_TRUE(ProgressPrinter(ProgressMode::kJson, false).Sink() != nullptr);
  EXPECT_TRUE(ProgressPrinter(ProgressMode::kNone, true).Sink() == nullptr);
}

}  // namespace
}  // namespace slimpack::cli
