// BuildReport on the bundled models with candidates built in-process: a
// "deliberately broken" layer (2-bit weights, the rest 8-bit) must be ranked
// first, named first by the gate, and the figures must agree with
// independent computations (direct interpreter runs, the perplexity tool).
#include "report/report.h"

#include <cmath>
#include <cstring>

#include "eval/perplexity.h"
#include "eval/runnable_model.h"
#include "runtime/interpreter.h"
#include "report/gate.h"
#include "report/layer_match.h"
#include "report/render.h"
#include "formats/safetensors/safetensors_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/report/test_models.h"
#include "support/regex.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::report {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

const std::string kDigits = std::string(SLIMPACK_SOURCE_DIR) + "/examples/digits-cnn/";
const std::string kLlama = std::string(SLIMPACK_SOURCE_DIR) + "/examples/tiny-llama";

calibration::Dataset OpenDigits(const ir::Model& m) {
  calibration::DatasetOptions o;
  o.rename["input"] = "inputs";
  o.max_batch = 64;
  auto d = calibration::Dataset::Open({kDigits + "eval.safetensors"},
                                      calibration::FeedInputs(m.graph), o);
  EXPECT_THAT(d, IsOk());
  return *std::move(d);
}

std::vector<int64_t> DigitsLabels() {
  auto f = safetensors::ReadSafetensorsFile(kDigits + "eval.safetensors");
  EXPECT_THAT(f, IsOk());
  for (const ir::Tensor& t : f->tensors) {
    if (t.name != "labels") continue;
    std::vector<int64_t> v(t.data.size() / 8);
    std::memcpy(v.data(), t.data.data(), v.size() * 8);
    return v;
  }
  return {};
}

struct Digits {
  ir::Model reference;
  ir::Model broken;
};

Digits LoadDigits() {
  auto ref = eval::LoadRunnableModel(kDigits + "model.onnx");
  EXPECT_THAT(ref, IsOk());
  Digits d{*ref, testing::RoundWeights(*ref, 8, {{"conv2.weight", 2}})};
  return d;
}

TEST(ReportBuilderTest, BrokenDigitsLayerIsRankedFirstAndNamedByTheGate) {
  Digits m = LoadDigits();
  calibration::Dataset data = OpenDigits(m.reference);
  ReportOptions o;
  o.labels = DigitsLabels();
  ASSERT_EQ(o.labels.size(), 450u);
  o.sensitivity_runs = 2;
  auto r = BuildReport(m.reference, m.broken, data, o);
  ASSERT_THAT(r, IsOk());

  // Layers: every Conv, BN and the Gemm read weights.
  ASSERT_EQ(r->layers.size(), 7u);
  EXPECT_EQ(r->end_to_end.task, "classifier");
  EXPECT_EQ(r->end_to_end.samples, 450);
  // The trained accuracy (expected.json: 443/450) is the reference's.
  EXPECT_NEAR(r->end_to_end.classes.RefAccuracy(), 443.0 / 450, 1e-12);

  const LayerReport* conv2 = nullptr;
  const LayerReport* rank1 = nullptr;
  for (const LayerReport& l : r->layers) {
    if (l.node == "/conv2/Conv") conv2 = &l;
    if (l.sensitivity_rank == 1) rank1 = &l;
  }
  ASSERT_TRUE(conv2 && rank1);
  EXPECT_EQ(rank1->node, "/conv2/Conv");
  // conv2 introduces its error: quant-only SQNR is the lowest of all layers
  // and far below the 8-bit layers'.
  for (const LayerReport& l : r->layers) {
    ASSERT_TRUE(l.has_quant_only) << l.node;
    if (&l != conv2) {
      EXPECT_GT(l.quant_only.Sqnr(), conv2->quant_only.Sqnr() + 10) << l.node;
    }
  }
  // bn2 inherits conv2's error but adds little of its own.
  const LayerReport& bn2 = r->layers[conv2->depth + 1];
  EXPECT_EQ(bn2.node, "/bn2/BatchNormalization");
  EXPECT_LT(bn2.propagated.Sqnr(), bn2.quant_only.Sqnr() - 10);

  auto rules = ParseGateRules("layer.quant_sqnr>=20,e2e.sqnr>=40");
  ASSERT_THAT(rules, IsOk());
  auto gate = EvaluateGate(*rules, *r);
  ASSERT_THAT(gate, IsOk());
  ASSERT_FALSE((*gate)[0].passed);
  ASSERT_FALSE((*gate)[0].offenders.empty());
  EXPECT_EQ((*gate)[0].offenders[0].first, "/conv2/Conv");
  EXPECT_THAT((*gate)[0].message, HasSubstr("/conv2/Conv"));

  // Fallback: conv2 first; restoring it cuts the damage.
  ASSERT_TRUE(r->fallback.has_value());
  EXPECT_EQ(r->fallback->layers[0], "/conv2/Conv");
  EXPECT_LT(r->fallback->after, 0.5 * r->fallback->before);
  const auto recipe = FallbackRecipe(*r);
  EXPECT_EQ(recipe["rules"][0]["match"], "^conv2\\.weight$");
  auto re = support::Regex::Compile(recipe["rules"][0]["match"].get<std::string>());
  ASSERT_TRUE(re.ok()) << re.status();
  EXPECT_TRUE(re->FullMatch("conv2.weight"));
}

TEST(ReportBuilderTest, FiguresMatchIndependentComputation) {
  Digits m = LoadDigits();
  calibration::Dataset data = OpenDigits(m.reference);
  ReportOptions o;
  o.sensitivity_runs = 0;
  auto r = BuildReport(m.reference, m.broken, data, o);
  ASSERT_THAT(r, IsOk());

  // End to end: run both models on all 450 images at once and sum here.
  runtime::InterpreterOptions io;
  auto ri = runtime::Interpreter::Create(m.reference, io);
  auto ci = runtime::Interpreter::Create(m.broken, io);
  ASSERT_THAT(ri, IsOk());
  ASSERT_THAT(ci, IsOk());
  data.Rewind();
  double num = 0, den = 0;
  int64_t agree = 0, n = 0;
  while (true) {
    auto s = data.Next();
    ASSERT_THAT(s, IsOk());
    if (!*s) break;
    auto a = ri->Run((*s)->inputs);
    auto b = ci->Run((*s)->inputs);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    const float* x = (*a)[0].data<float>();
    const float* y = (*b)[0].data<float>();
    for (int64_t i = 0; i < (*a)[0].num_elements(); ++i) {
      num += double(x[i]) * x[i];
      den += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    }
    for (int64_t i = 0; i < (*a)[0].dim(0); ++i, ++n) {
      agree += ArgMax(x + 10 * i, 10) == ArgMax(y + 10 * i, 10);
    }
  }
  EXPECT_NEAR(r->end_to_end.output.Sqnr(), 10 * std::log10(num / den), 1e-9);
  EXPECT_DOUBLE_EQ(r->end_to_end.classes.Top1Agreement(), double(agree) / n);

  // The first layer reads the graph input, which both models share: its
  // quant-only and propagated errors are the same numbers.
  EXPECT_EQ(r->layers[0].node, "/conv1/Conv");
  EXPECT_DOUBLE_EQ(r->layers[0].quant_only.Sqnr(), r->layers[0].propagated.Sqnr());

  // Weight SQNR of conv2 straight from the tensors.
  const ir::Tensor* wr = m.reference.graph.FindInitializer("conv2.weight");
  const ir::Tensor* wc = m.broken.graph.FindInitializer("conv2.weight");
  const float* p = reinterpret_cast<const float*>(wr->data.data());
  const float* q = reinterpret_cast<const float*>(wc->data.data());
  double s = 0, e = 0;
  for (size_t i = 0; i < wr->data.size() / 4; ++i) {
    s += double(p[i]) * p[i];
    e += (double(q[i]) - p[i]) * (double(q[i]) - p[i]);
  }
  bool found = false;
  for (const WeightReport& w : r->weights) {
    if (w.name != "conv2.weight") continue;
    found = true;
    EXPECT_TRUE(w.compared);
    EXPECT_EQ(w.bits_per_weight, 32);
    EXPECT_NEAR(w.error.Sqnr(), 10 * std::log10(s / e), 1e-9);
  }
  EXPECT_TRUE(found);
}

TEST(ReportBuilderTest, IdenticalCandidateIsExactEverywhere) {
  Digits m = LoadDigits();
  calibration::Dataset data = OpenDigits(m.reference);
  ReportOptions o;
  o.max_runs = 2;
  auto r = BuildReport(m.reference, m.reference, data, o);
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(std::isinf(r->end_to_end.output.Sqnr()));
  EXPECT_EQ(r->end_to_end.classes.Top1Agreement(), 1.0);
  ASSERT_FALSE(r->layers.empty());  // the loop below must see layers
  for (const LayerReport& l : r->layers) {
    EXPECT_EQ(l.propagated.MaxAbs(), 0) << l.node;
    EXPECT_EQ(l.quant_only.MaxAbs(), 0) << l.node;
    EXPECT_FALSE(l.sensitivity.has_value());
  }
  EXPECT_FALSE(r->fallback.has_value());
  // Infinite SQNR is written as null, flagged identical.
  const auto j = ReportToJson(*r);
  EXPECT_TRUE(j["end_to_end"]["output"]["sqnr_db"].is_null());
  EXPECT_TRUE(j["end_to_end"]["output"]["identical"].get<bool>());
}

TEST(ReportBuilderTest, QuantizedWeightIsComparedDequantized) {
  Digits m = LoadDigits();
  ir::Model cand = testing::QuantizeInt8PerChannel(m.reference, "conv2.weight");
  calibration::Dataset data = OpenDigits(m.reference);
  ReportOptions o;
  o.max_runs = 2;
  o.sensitivity_runs = 1;
  auto r = BuildReport(m.reference, cand, data, o);
  ASSERT_THAT(r, IsOk());
  // Independent: float(q) * scale straight from the stored bytes.
  const ir::Tensor* ref = m.reference.graph.FindInitializer("conv2.weight");
  const ir::Tensor* q = cand.graph.FindInitializer("conv2.weight");
  const ir::Tensor* sc = cand.graph.FindInitializer("conv2.weight.scale");
  const int64_t rows = q->dims[0], n = static_cast<int64_t>(q->data.size()), per = n / rows;
  const float* w = reinterpret_cast<const float*>(ref->data.data());
  const float* scale = reinterpret_cast<const float*>(sc->data.data());
  double sig = 0, err = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float x = static_cast<float>(static_cast<int8_t>(q->data.data()[i])) * scale[i / per];
    sig += double(w[i]) * w[i];
    err += (double(x) - w[i]) * (double(x) - w[i]);
  }
  const WeightReport* wr = nullptr;
  for (const WeightReport& x : r->weights) {
    if (x.name == "conv2.weight") wr = &x;
  }
  ASSERT_NE(wr, nullptr);
  EXPECT_TRUE(wr->compared) << wr->note;
  EXPECT_EQ(wr->scheme, "int8-per-channel");
  EXPECT_DOUBLE_EQ(wr->bits_per_weight, 8.0 + 32.0 * rows / n);
  EXPECT_NEAR(wr->error.Sqnr(), 10 * std::log10(sig / err), 1e-9);
  EXPECT_GT(wr->error.Sqnr(), 30);  // 8-bit: a healthy weight
  // The layer still runs alone (its scale travels with it) and has a rank.
  int conv2_layers = 0;
  for (const LayerReport& l : r->layers) {
    if (l.node != "/conv2/Conv") continue;
    ++conv2_layers;
    EXPECT_TRUE(l.has_quant_only);
    EXPECT_GT(l.quant_only.count(), 0);
    EXPECT_EQ(l.sensitivity_rank, 1);
  }
  EXPECT_EQ(conv2_layers, 1);
}

TEST(ReportBuilderTest, CalibratedRangeGivesOverflowRateAndCoverageNote) {
  Digits m = LoadDigits();
  calibration::CalibrationTable table;
  // conv1's output spans roughly [-3, 3] on this data: [-0.5, 0.5] clips a
  // good part of it; conv2's generous range clips nothing.
  table.tensors["/conv1/Conv_output_0"].range.lo = -0.5;
  table.tensors["/conv1/Conv_output_0"].range.hi = 0.5;
  table.tensors["/conv2/Conv_output_0"].range.lo = -1e6;
  table.tensors["/conv2/Conv_output_0"].range.hi = 1e6;
  calibration::Dataset data = OpenDigits(m.reference);
  ReportOptions o;
  o.max_runs = 1;
  o.sensitivity_runs = 0;
  o.calibration = &table;
  auto r = BuildReport(m.reference, m.broken, data, o);
  ASSERT_THAT(r, IsOk());
  const TensorErrorStats& c1 = r->layers[0].propagated;
  const TensorErrorStats& c2 = r->layers[2].propagated;
  ASSERT_TRUE(c1.has_clip_range() && c2.has_clip_range());
  EXPECT_FALSE(r->layers[1].propagated.has_clip_range());
  EXPECT_GT(c1.OverflowRate(), 0.0);
  EXPECT_LT(c1.OverflowRate(), 1.0);
  EXPECT_TRUE(c1.RefMin() < -0.5 || c1.RefMax() > 0.5);
  EXPECT_EQ(c2.OverflowRate(), 0.0);
  int coverage_notes = 0;
  for (const std::string& n : r->notes) {
    if (n.rfind("calibration coverage: '/conv1/Conv_output_0'", 0) == 0) ++coverage_notes;
    EXPECT_EQ(n.find("/conv2/Conv_output_0"), std::string::npos) << n;
  }
  EXPECT_EQ(coverage_notes, 1);
  auto rules = ParseGateRules("layer.overflow_rate<=0.01");
  ASSERT_THAT(rules, IsOk());
  auto gate = EvaluateGate(*rules, *r);
  ASSERT_THAT(gate, IsOk());
  ASSERT_EQ((*gate)[0].offenders.size(), 1u);
  EXPECT_EQ((*gate)[0].offenders[0].first, "/conv1/Conv");
}

TEST(ReportBuilderTest, MismatchedModelsAreRejected) {
  Digits m = LoadDigits();
  auto llama = eval::LoadRunnableModel(kLlama);
  ASSERT_THAT(llama, IsOk());
  calibration::Dataset data = OpenDigits(m.reference);
  EXPECT_THAT(BuildReport(m.reference, *llama, data, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("mismatched models: reference inputs [input] vs candidate "
                                 "inputs [input_ids]")));
}

TEST(ReportBuilderTest, LabelCountMustMatchSamples) {
  Digits m = LoadDigits();
  calibration::Dataset data = OpenDigits(m.reference);
  ReportOptions o;
  o.labels = {1, 2, 3};
  o.sensitivity_runs = 0;
  EXPECT_THAT(BuildReport(m.reference, m.broken, data, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 labels")));
}

TEST(ReportBuilderTest, FusedNodeIsMatchedThroughProvenance) {
  // Candidate: conv1 and bn1 replaced by one node named like a fusion pass
  // would, whose output has a new name; it must be compared at bn1's output.
  Digits m = LoadDigits();
  ir::Model fused = m.reference;
  auto& nodes = fused.graph.nodes;
  ir::Node& bn = nodes[1];
  ASSERT_EQ(bn.name, "/bn1/BatchNormalization");
  bn.name = "fused_conv1_bn1";
  bn.outputs[0] = "fused_out";
  bn.provenance.source_nodes = {"/conv1/Conv", "/bn1/BatchNormalization"};
  nodes[2].inputs[0] = "fused_out";
  const LayerMatches lm = MatchLayers(m.reference.graph, fused.graph);
  bool seen = false;
  for (const LayerMatch& l : lm.layers) {
    if (fused.graph.nodes[l.node_index].name != "fused_conv1_bn1") continue;
    seen = true;
    EXPECT_EQ(l.matched_by, "provenance");
    EXPECT_EQ(l.reference_output, "/bn1/BatchNormalization_output_0");
  }
  EXPECT_TRUE(seen);
  calibration::Dataset data = OpenDigits(m.reference);
  ReportOptions o;
  o.max_runs = 1;
  auto r = BuildReport(m.reference, fused, data, o);
  ASSERT_THAT(r, IsOk());
  bool noted = false;
  for (const std::string& n : r->notes) noted |= n.find("fusion: 'fused_conv1_bn1'") == 0;
  EXPECT_TRUE(noted);
  ASSERT_FALSE(r->layers.empty());
  ASSERT_FALSE(r->weights.empty());
  for (const LayerReport& l : r->layers) EXPECT_EQ(l.propagated.MaxAbs(), 0) << l.node;
  // conv1 and bn1 both read weights: the fused node's weights count as
  // folded, so they are neither compared nor ranked.
  for (const LayerReport& l : r->layers) {
    EXPECT_EQ(l.weights_folded, l.node == "fused_conv1_bn1") << l.node;
  }
  for (const WeightReport& w : r->weights) {
    const bool bn1 = w.name.rfind("bn1.", 0) == 0;
    EXPECT_EQ(w.compared, !bn1) << w.name;
    if (bn1) {
      EXPECT_THAT(w.note, HasSubstr("folded by fusion into 'fused_conv1_bn1'"));
    }
  }
}

TEST(ReportBuilderTest, OutputsAreDeterministicAcrossThreadCounts) {
  Digits m = LoadDigits();
  std::string first;
  for (int threads : {1, 2}) {
    calibration::Dataset data = OpenDigits(m.reference);
    ReportOptions o;
    o.num_threads = threads;
    o.max_runs = 2;
    o.sensitivity_runs = 1;
    auto r = BuildReport(m.reference, m.broken, data, o);
    ASSERT_THAT(r, IsOk());
    const std::string text = ReportToJson(*r).dump(2) + RenderMarkdown(*r) + RenderHtml(*r);
    if (first.empty()) {
      first = text;
    } else {
      EXPECT_EQ(text, first);
    }
  }
}

TEST(ReportBuilderTest, BrokenLlamaLayerIsRankedFirstAndKldMatchesPerplexityTool) {
  auto ref = eval::LoadRunnableModel(kLlama);
  ASSERT_THAT(ref, IsOk());
  const std::string broken_w = "model.layers.1.mlp.down_proj.weight";
  ir::Model cand = testing::RoundWeights(*ref, 8, {{broken_w, 2}});
  calibration::DatasetOptions dopt;
  dopt.max_batch = 4;
  auto data = calibration::Dataset::Open({kLlama + "/eval_tokens.npy"},
                                         calibration::FeedInputs(ref->graph), dopt);
  ASSERT_THAT(data, IsOk());
  ReportOptions o;
  o.max_runs = 1;
  o.sensitivity_runs = 1;
  auto r = BuildReport(*ref, cand, *data, o);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->end_to_end.task, "lm");
  ASSERT_TRUE(r->end_to_end.lm.has_value());
  const auto& lm = *r->end_to_end.lm;
  EXPECT_EQ(lm.tokens, 4 * 63);
  EXPECT_GT(lm.mean_kld, 0);
  EXPECT_EQ(r->sensitivity_metric, "mean_kld");

  const LayerReport* rank1 = nullptr;
  for (const LayerReport& l : r->layers) {
    if (l.sensitivity_rank == 1) rank1 = &l;
  }
  ASSERT_NE(rank1, nullptr);
  ASSERT_EQ(rank1->weights.size(), 1u);
  EXPECT_EQ(rank1->weights[0], broken_w);

  // The reference perplexity equals the perplexity tool's on the same 4
  // windows (same pinned protocol, computed by separate code).
  data->Rewind();
  auto s = data->Next();
  ASSERT_THAT(s, IsOk());
  const auto ids = (**s).inputs.at("input_ids").ToVector<int64_t>();
  runtime::InterpreterOptions io;
  auto ri = runtime::Interpreter::Create(*ref, io);
  ASSERT_THAT(ri, IsOk());
  eval::PerplexityOptions po;
  po.window = 64;
  auto ppl = eval::ComputePerplexity(*ri, ids, po);
  ASSERT_THAT(ppl, IsOk());
  EXPECT_NEAR(lm.ppl_ref, ppl->perplexity, 1e-9 * ppl->perplexity);
}

}  // namespace
}  // namespace slimpack::report
