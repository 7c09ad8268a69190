// The float model walked layer by layer (quantize/float_walk.h) on the
// bundled trained LM, against one capture of the whole decoder graph:
//  - imatrix's mean x^2, AWQ's mean |x| and kept rows, and X^T X are those
//    of the whole-model capture bit for bit, for every linear;
//  - the same with nothing cached between layers (every layer run from the
//    model inputs), which the log says;
//  - groups come in layer order, lm_head (no layer) last;
//  - a capture that stops at the linears' inputs (the walk's slices) sees
//    what one that runs them sees;
//  - a weight that is no linear's is refused naming it.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "calibration/linear_stats.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hf/llama_graph_builder.h"
#include "ir/graph_slice.h"
#include "quantize/awq_fold.h"
#include "quantize/float_walk.h"
#include "quantize/importance_matrix.h"
#include "quantize/linear_capture.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tiny_llama_eval.h"

namespace slimpack::quantize {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kRuns = 2;  // 16 windows

std::vector<std::string> Calib() {
  return {::slimpack::testing::TinyLlamaDir() + "/calib_tokens.npy"};
}

struct Whole {
  ir::Model decoder;
  std::vector<std::string> weights;  // every linear's, in node order
  std::map<std::string, CapturedInput> captured;
};

// One capture of the whole float decoder graph: what a run of the model did
// before the walk.
Whole CaptureWhole(const ir::Model& ckpt, bool hessian, int64_t keep_rows) {
  Whole w;
  auto decoder = hf::BuildDecoderGraph(ckpt);
  EXPECT_THAT(decoder, IsOk());
  w.decoder = *std::move(decoder);
  for (const calibration::LinearLayer& l : calibration::FindLinearLayers(w.decoder.graph)) {
    w.weights.push_back(l.weight);
  }
  auto data = OpenCalibrationData(w.decoder, Calib());
  EXPECT_THAT(data, IsOk());
  CaptureRequest cr;
  cr.hessian = hessian;
  cr.keep_rows = keep_rows;
  auto captured = CaptureLinearInputs(w.decoder, w.weights, *data, kRuns, cr, 1);
  EXPECT_THAT(captured, IsOk());
  w.captured = *std::move(captured);
  return w;
}

void ExpectSame(const CapturedInput& got, const CapturedInput& want, const std::string& weight) {
  EXPECT_EQ(got.rows, want.rows) << weight;
  EXPECT_EQ(got.mean_abs, want.mean_abs) << weight;
  EXPECT_EQ(got.mean_sq, want.mean_sq) << weight;
  EXPECT_EQ(got.xtx, want.xtx) << weight;
  EXPECT_EQ(got.kept, want.kept) << weight;
  EXPECT_EQ(got.samples, want.samples) << weight;
}

TEST(FloatWalkTest, EveryStatisticIsTheWholeModelCapturesCachedOrNot) {
  const ir::Model ckpt = ::slimpack::testing::TinyLlamaCheckpoint();
  const Whole whole = CaptureWhole(ckpt, /*hessian=*/true, /*keep_rows=*/100);
  ASSERT_EQ(whole.weights.size(), 29u);  // 4 layers x 7 and lm_head
  for (const uint64_t cache_bytes : {uint64_t{1} << 30, uint64_t{0}}) {
    auto data = OpenCalibrationData(whole.decoder, Calib());
    ASSERT_THAT(data, IsOk());
    FloatWalkOptions o;
    o.max_runs = kRuns;
    o.threads = 2;
    o.cache_bytes = cache_bytes;
    o.capture.hessian = true;
    o.capture.keep_rows = 100;
    o.stage = "test";
    std::vector<std::string> log, order;
    o.log = [&log](const std::string& line) { log.push_back(line); };
    std::map<std::string, CapturedInput> walked;
    ASSERT_THAT(WalkFloatModel(ckpt, whole.weights, *data, o,
                               [&](const std::string& w, CapturedInput& c) {
                                 order.push_back(w);
                                 walked[w] = c;
                                 return absl::OkStatus();
                               }),
                IsOk());
    ASSERT_EQ(walked.size(), 29u);
    for (const std::string& w : whole.weights) ExpectSame(walked.at(w), whole.captured.at(w), w);
    // Layer order, each layer's weights as given, lm_head last.
    ASSERT_EQ(order.size(), 29u);
    EXPECT_EQ(order.front(), whole.weights.front());
    EXPECT_EQ(order.back(), "lm_head.weight");
    for (size_t i = 0; i + 1 < 28; ++i) {
      EXPECT_LE(ckpt.graph.FindInitializer(order[i])->layer,
                ckpt.graph.FindInitializer(order[i + 1])->layer) << order[i];
    }
    // Five groups; from the cache every group after the first, or from the
    // inputs every time once nothing may be cached.
    int from_inputs = 0, groups = 0;
    bool dropped = false;
    for (const std::string& l : log) {
      if (l.find("quantize: test: capturing X^T X") == 0) {
        ++groups;
        if (l.find("from the model inputs") != std::string::npos) ++from_inputs;
      }
      dropped = dropped || l.find("exceed 0 bytes") != std::string::npos;
    }
    EXPECT_EQ(groups, 5);
    EXPECT_EQ(from_inputs, cache_bytes == 0 ? 5 : 1) << cache_bytes;
    EXPECT_EQ(dropped, cache_bytes == 0);
  }
}

TEST(FloatWalkTest, ImatrixAndAwqInputsAreTheWholeModelCaptures) {
  const ir::Model ckpt = ::slimpack::testing::TinyLlamaCheckpoint();
  const Whole whole = CaptureWhole(ckpt, /*hessian=*/false, /*keep_rows=*/64);
  auto imatrix = ComputeImportanceMatrix(ckpt, Calib(), kRuns, 2);
  ASSERT_THAT(imatrix, IsOk());
  EXPECT_EQ(imatrix->samples, 16);
  ASSERT_EQ(imatrix->columns.size(), 29u);
  for (const std::string& w : whole.weights) {
    const std::vector<double>& want = whole.captured.at(w).mean_sq;
    EXPECT_EQ(imatrix->columns.at(w), std::vector<float>(want.begin(), want.end())) << w;
  }
  EXPECT_EQ(imatrix->rows, whole.captured.at("lm_head.weight").rows);

  std::set<std::string> every_linear;
  for (const std::string& w : whole.weights) {
    if (w != "lm_head.weight") every_linear.insert(w);
  }
  auto data = OpenCalibrationData(whole.decoder, Calib());
  ASSERT_THAT(data, IsOk());
  AwqFoldOptions opts;
  opts.max_runs = kRuns;
  opts.keep_rows = 64;
  opts.threads = 2;
  auto awq = CaptureAwqInputs(ckpt, every_linear, *data, opts);
  ASSERT_THAT(awq, IsOk());
  // q/k/v, gate/up and down read three inputs per layer (a shared input
  // keyed by its first member); o_proj is not scaled under GQA.
  EXPECT_EQ(awq->size(), 12u);
  for (const auto& [w, c] : *awq) {
    const CapturedInput& want = whole.captured.at(w);
    EXPECT_EQ(c.rows, want.rows) << w;
    EXPECT_EQ(c.mean_abs, want.mean_abs) << w;
    EXPECT_EQ(c.kept, 64) << w;
    EXPECT_EQ(c.samples, want.samples) << w;
  }
}

TEST(FloatWalkTest, ACaptureThatStopsAtTheInputsSeesWhatARunOfTheLinearsSees) {
  const ir::Model ckpt = ::slimpack::testing::TinyLlamaCheckpoint();
  const Whole whole = CaptureWhole(ckpt, /*hessian=*/true, /*keep_rows=*/0);
  const std::vector<calibration::LinearLayer> linears =
      calibration::FindLinearLayers(whole.decoder.graph);
  // lm_head's and layer 3's down_proj's inputs, without running either.
  std::vector<std::string> targets, weights;
  for (const calibration::LinearLayer& l : linears) {
    if (l.weight == "lm_head.weight" || l.weight == "model.layers.3.mlp.down_proj.weight") {
      targets.push_back(l.input);
      weights.push_back(l.weight);
    }
  }
  ASSERT_EQ(weights.size(), 2u);
  ir::Model slice = whole.decoder;
  auto g = ir::SliceGraph(whole.decoder.graph, targets, {});
  ASSERT_THAT(g, IsOk());
  slice.graph = *std::move(g);
  EXPECT_TRUE(calibration::FindLinearLayers(slice.graph).size() < linears.size());
  EXPECT_EQ(slice.graph.FindInitializer("lm_head.weight"), nullptr);
  auto data = OpenCalibrationData(whole.decoder, Calib());
  ASSERT_THAT(data, IsOk());
  CaptureRequest cr;
  cr.hessian = true;
  cr.layers = &linears;
  auto got = CaptureLinearInputs(slice, weights, *data, kRuns, cr, 2);
  ASSERT_THAT(got, IsOk());
  for (const std::string& w : weights) ExpectSame(got->at(w), whole.captured.at(w), w);
  // Without the whole graph's linears, the slice has no lm_head to find.
  cr.layers = nullptr;
  EXPECT_THAT(CaptureLinearInputs(slice, weights, *data, kRuns, cr, 2).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("'lm_head.weight'")));
}

TEST(FloatWalkTest, AWeightThatIsNoLinearsIsRefusedNamingIt) {
  const ir::Model ckpt = ::slimpack::testing::TinyLlamaCheckpoint();
  auto decoder = hf::BuildDecoderGraph(ckpt);
  ASSERT_THAT(decoder, IsOk());
  auto data = OpenCalibrationData(*decoder, Calib());
  ASSERT_THAT(data, IsOk());
  FloatWalkOptions o;
  o.max_runs = 1;
  o.stage = "test";
  int calls = 0;
  const absl::Status s = WalkFloatModel(
      ckpt, {"model.layers.0.input_layernorm.weight"}, *data, o,
      [&calls](const std::string&, CapturedInput&) {
        ++calls;
        return absl::OkStatus();
      });
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kNotFound,
                          HasSubstr("'model.layers.0.input_layernorm.weight'")));
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace slimpack::quantize
