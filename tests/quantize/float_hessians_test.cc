// GPTQ from precomputed Hessians (issue 17: the statistics every part of a
// split conversion shares), on the bundled trained LM:
//  - the layer-by-layer capture of the float model gives exactly the X^T X
//    one capture of the whole float model gives;
//  - QuantizeWeights with those Hessians stores, for every weight, the bytes
//    of quant::QuantizeGptq called on it directly, whether quantized at once
//    or deferred to the writer's requests;
//  - the result beats RTN's perplexity at the same bits;
//  - a weight without an entry, or with one of another size, is refused
//    naming the file.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "calibration/linear_stats.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hf/llama_graph_builder.h"
#include "quantize/deferred_weights.h"
#include "quantize/float_hessians.h"
#include "quantize/hessian_source.h"
#include "quantize/importance_matrix.h"
#include "quantize/numerics/gptq.h"
#include "quantize/numerics/pack.h"
#include "quantize/quantize_weights.h"
#include "quantize/weight_matrix.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tiny_llama_eval.h"

namespace slimpack::quantize {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kRuns = 2;  // 16 windows: enough for full-rank Hessians here
constexpr int64_t kEvalWindows = 64;

std::vector<std::string> Calib() { return {::slimpack::testing::TinyLlamaDir() + "/calib_tokens.npy"}; }

// Hessians held in memory, as a file would hand them out.
class MapHessians : public HessianSource {
 public:
  const std::string& file() const override { return file_; }
  const std::string& dataset() const override { return file_; }
  int64_t samples() const override { return 0; }
  std::optional<int64_t> Columns(const std::string& weight) const override {
    auto it = entries.find(weight);
    if (it == entries.end()) return std::nullopt;
    int64_t k = 0;
    while (static_cast<size_t>(k * k) < it->second.xtx.size()) ++k;
    return k;
  }
  absl::StatusOr<LinearHessian> Read(const std::string& weight) const override {
    auto it = entries.find(weight);
    if (it == entries.end()) return absl::NotFoundError("no Hessian for '" + weight + "'");
    return it->second;
  }
  std::map<std::string, LinearHessian> entries;

 private:
  std::string file_ = "test.hessians";
};

std::shared_ptr<MapHessians> FloatHessians(const ir::Model& model) {
  auto h = std::make_shared<MapHessians>();
  FloatHessianOptions o;
  o.max_runs = kRuns;
  o.threads = 2;
  auto samples = ComputeFloatHessians(model, Calib(), o,
                                      [&](const std::string& w, const CapturedInput& c) {
                                        h->entries[w] = {c.xtx, c.rows};
                                        return absl::OkStatus();
                                      });
  EXPECT_THAT(samples, IsOk());
  EXPECT_EQ(*samples, 16);
  return h;
}

TEST(FloatHessiansTest, LayerByLayerEqualsOneCaptureOfTheFloatModel) {
  const ir::Model ckpt = ::slimpack::testing::TinyLlamaCheckpoint();
  const std::shared_ptr<MapHessians> walked = FloatHessians(ckpt);
  auto linears = LinearInputs(ckpt);
  ASSERT_THAT(linears, IsOk());
  ASSERT_EQ(linears->size(), 29u);  // 4 layers x 7 and lm_head
  ASSERT_EQ(walked->entries.size(), 29u);

  auto decoder = hf::BuildDecoderGraph(ckpt);
  ASSERT_THAT(decoder, IsOk());
  auto data = OpenCalibrationData(*decoder, Calib());
  ASSERT_THAT(data, IsOk());
  std::vector<std::string> weights;
  for (const LinearInput& l : *linears) weights.push_back(l.weight);
  CaptureRequest cr;
  cr.hessian = true;
  auto whole = CaptureLinearInputs(*decoder, weights, *data, kRuns, cr, 1);
  ASSERT_THAT(whole, IsOk());
  for (const LinearInput& l : *linears) {
    const LinearHessian& got = walked->entries.at(l.weight);
    const CapturedInput& want = whole->at(l.weight);
    EXPECT_EQ(got.rows, want.rows) << l.weight;
    ASSERT_EQ(got.xtx.size(), static_cast<size_t>(l.in_features * l.in_features)) << l.weight;
    EXPECT_EQ(got.xtx, want.xtx) << l.weight;
  }
}

QuantizeRequest GptqRequest(std::shared_ptr<const HessianSource> h) {
  QuantizeRequest req;
  req.config.scheme = *ParseWeightScheme("int4-g32");
  req.config.algorithm = Algorithm::kGptq;
  req.threads = 2;
  req.hessians = std::move(h);
  return req;
}

std::string Bytes(const ir::TensorData& d) {
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

TEST(GptqFromHessiansTest, EveryWeightHasTheDirectCallsBytesAtOnceOrDeferred) {
  const ir::Model ckpt = ::slimpack::testing::TinyLlamaCheckpoint();
  const std::shared_ptr<MapHessians> h = FloatHessians(ckpt);

  ir::Model eager = ckpt;
  auto now = QuantizeWeights(eager, GptqRequest(h));
  ASSERT_THAT(now, IsOk());
  EXPECT_EQ(now->deferred, nullptr);
  ir::Model late = ckpt;
  QuantizeRequest deferring = GptqRequest(h);
  deferring.defer_rtn = true;
  auto later = QuantizeWeights(late, deferring);
  ASSERT_THAT(later, IsOk());
  ASSERT_NE(later->deferred, nullptr);
  EXPECT_EQ(later->deferred->weights(), 30u);  // 29 GPTQ linears and the rtn-mse embedding

  // Same graph, same bytes: the deferred ones as the writer would ask.
  ASSERT_EQ(eager.graph.initializers().size(), late.graph.initializers().size());
  int gptq = 0;
  for (const ir::Tensor& t : eager.graph.initializers()) {
    const ir::Tensor* d = late.graph.FindInitializer(t.name);
    ASSERT_NE(d, nullptr) << t.name;
    EXPECT_EQ(d->dtype, t.dtype) << t.name;
    EXPECT_EQ(d->dims, t.dims) << t.name;
    EXPECT_TRUE(d->quant == t.quant) << t.name;
    if (later->deferred->Holds(t.name)) {
      auto bytes = later->deferred->Produce(t.name);
      ASSERT_THAT(bytes, IsOk()) << t.name;
      EXPECT_EQ(Bytes(*bytes), Bytes(t.data)) << t.name;
    } else {
      EXPECT_EQ(Bytes(d->data), Bytes(t.data)) << t.name;
    }
    if (h->entries.count(t.name)) {
      ++gptq;
      // The direct call on the f32 matrix with the same statistics.
      const ir::Tensor* source = ckpt.graph.FindInitializer(t.name);
      auto m = AsMatrix(*source, false);
      ASSERT_THAT(m, IsOk());
      quant::GptqOptions go;
      go.threads = 1;
      const LinearHessian& hs = h->entries.at(t.name);
      auto q = quant::QuantizeGptq(m->w.data(), m->rows, m->cols,
                                   ParseWeightScheme("int4-g32")->Numerics(), hs.xtx, hs.rows, go);
      ASSERT_THAT(q, IsOk());
      auto packed = quant::ToIrTensors(*q, *source, false, "gptq");
      ASSERT_THAT(packed, IsOk());
      EXPECT_EQ(Bytes(packed->weight.data), Bytes(t.data)) << t.name;
    }
  }
  EXPECT_EQ(gptq, 29);

  // Quality at equal bits: better than RTN (perplexity on 64 eval windows).
  ir::Model rtn = ckpt;
  QuantizeRequest r;
  r.config.scheme = *ParseWeightScheme("int4-g32");
  r.config.algorithm = Algorithm::kRtn;
  ASSERT_THAT(QuantizeWeights(rtn, r), IsOk());
  const double fp = ::slimpack::testing::TinyLlamaPerplexity(ckpt, kEvalWindows);
  const double ppl_rtn = ::slimpack::testing::TinyLlamaPerplexity(rtn, kEvalWindows);
  const double ppl_gptq = ::slimpack::testing::TinyLlamaPerplexity(eager, kEvalWindows);
  std::printf("[ hessians ] perplexity fp32 %.6f, int4-g32 rtn %.6f, gptq from Hessians %.6f\n",
              fp, ppl_rtn, ppl_gptq);
  EXPECT_LT(ppl_gptq - fp, 0.8 * (ppl_rtn - fp));
}

TEST(GptqFromHessiansTest, AMissingOrMisSizedEntryIsRefusedNamingTheFile) {
  const ir::Model ckpt = ::slimpack::testing::TinyLlamaCheckpoint();
  auto h = std::make_shared<MapHessians>();
  h->entries["lm_head.weight"] = {std::vector<double>(8 * 8, 1.0), 1};
  ir::Model m = ckpt;
  EXPECT_THAT(QuantizeWeights(m, GptqRequest(h)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("test.hessians: the Hessian of 'lm_head.weight' is 8 x 8; the "
                                 "weight has 128 input columns")));
  h->entries.erase("lm_head.weight");
  ir::Model m2 = ckpt;
  EXPECT_THAT(QuantizeWeights(m2, GptqRequest(h)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("test.hessians: no Hessian for 'lm_head.weight', which gptq "
                                 "quantizes")));
}

}  // namespace
}  // namespace slimpack::quantize
