// quantize/layer_cut + layer_cache on the bundled trained LM's decoder
// graph: between decoder layers GPTQ keeps exactly the residual stream, a
// layer's runs start from it without re-running any earlier layer, and
// GPTQ from cached values stores the same bytes as GPTQ run from the model
// inputs each time.
#include "quantize/layer_cut.h"

#include <cstring>
#include <map>
#include <set>

#include "calibration/linear_stats.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hf/llama_graph_builder.h"
#include "ir/graph_slice.h"
#include "quantize/importance_matrix.h"
#include "quantize/layer_cache.h"
#include "quantize/linear_capture.h"
#include "quantize/quantize_weights.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tiny_llama_eval.h"

namespace slimpack::quantize {
namespace {

using ::slimpack::testing::IsOk;
using ::testing::HasSubstr;

struct Decoder {
  ir::Model graph;
  std::vector<std::vector<std::string>> groups;  // per layer, then lm_head
};

Decoder TinyDecoder() {
  ir::Model ckpt = ::slimpack::testing::TinyLlamaCheckpoint();
  auto built = hf::BuildDecoderGraph(ckpt);
  EXPECT_THAT(built, IsOk());
  Decoder d{*std::move(built), {}};
  std::map<int, std::vector<std::string>> by_layer;
  for (const calibration::LinearLayer& l : calibration::FindLinearLayers(d.graph.graph)) {
    const ir::Tensor* t = ckpt.graph.FindInitializer(l.weight);
    EXPECT_NE(t, nullptr) << l.weight;
    by_layer[t->layer >= 0 ? t->layer : INT32_MAX].push_back(l.weight);
  }
  for (auto& [layer, weights] : by_layer) d.groups.push_back(weights);
  return d;
}

const ir::Node* ProducerOf(const ir::Graph& g, const std::string& v) {
  for (const ir::Node& n : g.nodes) {
    for (const std::string& o : n.outputs) {
      if (o == v) return &n;
    }
  }
  return nullptr;
}

TEST(LayerCutTest, BetweenDecoderLayersOnlyTheResidualStreamIsKept) {
  const Decoder d = TinyDecoder();
  const ir::Graph& g = d.graph.graph;
  ASSERT_EQ(d.groups.size(), 5u);  // 4 layers, lm_head
  ASSERT_EQ(d.groups[0].size(), 7u);
  ASSERT_EQ(d.groups[4], std::vector<std::string>{"lm_head.weight"});
  auto cut = CachedValuesPerGroup(g, d.groups);
  ASSERT_THAT(cut, IsOk());
  ASSERT_EQ(cut->size(), 5u);
  EXPECT_TRUE((*cut)[0].empty());
  std::set<std::string> earlier(d.groups[0].begin(), d.groups[0].end());
  for (size_t grp = 1; grp < 5; ++grp) {
    ASSERT_EQ((*cut)[grp].size(), 1u) << "group " << grp;
    const ir::Node* p = ProducerOf(g, (*cut)[grp][0]);
    ASSERT_NE(p, nullptr);
    // Layers 1-3 start from the residual Add of the layer before; lm_head
    // from the final RMSNorm (its last op scales by the norm weight).
    EXPECT_EQ(p->op_type, grp < 4 ? "Add" : "Mul") << (*cut)[grp][0];
    auto slice = ir::SliceGraph(g, OutputsOfNodesReading(g, d.groups[grp]),
                                std::set<std::string>((*cut)[grp].begin(), (*cut)[grp].end()));
    ASSERT_THAT(slice, IsOk());
    for (const ir::Node& n : slice->nodes) {
      for (const std::string& r : n.inputs) {
        EXPECT_FALSE(earlier.count(r)) << "group " << grp << " re-runs " << n.name;
      }
    }
    EXPECT_LT(slice->nodes.size(), g.nodes.size() / 3) << "group " << grp;
    earlier.insert(d.groups[grp].begin(), d.groups[grp].end());
  }
}

TEST(LayerCutTest, AWeightNoNodeReadsIsNamed) {
  const Decoder d = TinyDecoder();
  EXPECT_THAT(CachedValuesPerGroup(d.graph.graph, {d.groups[0], {"no.such.weight"}}),
              ::slimpack::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("'no.such.weight'")));
}

TEST(LinearCaptureTest, LayersSharingAnInputGetWhatCapturingEachAloneGives) {
  const Decoder d = TinyDecoder();
  auto data = OpenCalibrationData(
      d.graph, {std::string(SLIMPACK_TINY_LLAMA_DIR) + "/calib_tokens.npy"});
  ASSERT_THAT(data, IsOk());
  CaptureRequest req;
  req.hessian = true;
  req.keep_rows = 5;
  const std::vector<std::string> qkv = {"model.layers.1.self_attn.q_proj.weight",
                                        "model.layers.1.self_attn.k_proj.weight",
                                        "model.layers.1.self_attn.v_proj.weight"};
  auto together = CaptureLinearInputs(d.graph, qkv, *data, 1, req, 2);
  ASSERT_THAT(together, IsOk());
  for (const std::string& w : qkv) {
    auto alone = CaptureLinearInputs(d.graph, {w}, *data, 1, req, 1);
    ASSERT_THAT(alone, IsOk());
    const CapturedInput& a = alone->at(w);
    const CapturedInput& t = together->at(w);
    EXPECT_EQ(t.layer.weight, w);
    EXPECT_EQ(t.layer.node, a.layer.node);
    EXPECT_GT(t.rows, 0u);
    EXPECT_EQ(t.rows, a.rows) << w;
    EXPECT_EQ(t.xtx, a.xtx) << w;
    EXPECT_EQ(t.mean_abs, a.mean_abs) << w;
    EXPECT_EQ(t.mean_sq, a.mean_sq) << w;
    EXPECT_EQ(t.kept, 5);
    EXPECT_EQ(t.samples, a.samples) << w;
  }
}

// The mechanism against the plain way: layer 2's inputs captured on the
// whole model vs captured on its slice fed with values advanced from layer
// 0 through layers 0 and 1 — with layers 0 and 1 changed (as quantization
// changes them), so a stale or mis-cut cache would show.
TEST(LayerCacheTest, CapturingFromAdvancedValuesEqualsCapturingOnTheWholeModel) {
  Decoder d = TinyDecoder();
  ir::Graph& g = d.graph.graph;
  for (size_t grp = 0; grp < 2; ++grp) {
    for (const std::string& w : d.groups[grp]) {
      ir::Tensor t = *g.FindInitializer(w);
      ASSERT_EQ(t.dtype, ir::DType::kF32);
      std::vector<uint8_t> bytes(t.data.data(), t.data.data() + t.data.size());
      float* v = reinterpret_cast<float*>(bytes.data());
      for (size_t i = 0; i < bytes.size() / 4; ++i) v[i] = v[i] * 0.9f + (i % 7 == 0 ? 0.01f : 0.0f);
      t.data = ir::TensorData::Owned(std::move(bytes));
      ASSERT_TRUE(g.RemoveInitializer(w));
      ASSERT_THAT(g.AddInitializer(std::move(t)), IsOk());
    }
  }
  auto data = OpenCalibrationData(
      d.graph, {std::string(SLIMPACK_TINY_LLAMA_DIR) + "/calib_tokens.npy"});
  ASSERT_THAT(data, IsOk());
  auto cut = CachedValuesPerGroup(g, d.groups);
  ASSERT_THAT(cut, IsOk());
  CaptureRequest req;
  req.hessian = true;
  auto whole = CaptureLinearInputs(d.graph, d.groups[2], *data, 2, req, 2);
  ASSERT_THAT(whole, IsOk());

  RunValues cache(2);
  for (size_t grp = 1; grp <= 2; ++grp) {
    auto next = AdvanceCachedValues(d.graph, cache, (*cut)[grp - 1], (*cut)[grp], *data, 2,
                                    uint64_t{1} << 30);
    ASSERT_THAT(next, IsOk());
    ASSERT_TRUE(next->has_value());
    cache = **next;
  }
  ir::Model sliced = d.graph;
  auto slice = ir::SliceGraph(g, OutputsOfNodesReading(g, d.groups[2]),
                              std::set<std::string>((*cut)[2].begin(), (*cut)[2].end()));
  ASSERT_THAT(slice, IsOk());
  sliced.graph = *std::move(slice);
  req.fed = &cache;
  auto from_cache = CaptureLinearInputs(sliced, d.groups[2], *data, 2, req, 2);
  ASSERT_THAT(from_cache, IsOk());
  for (const std::string& w : d.groups[2]) {
    EXPECT_GT(whole->at(w).rows, 0u);
    EXPECT_EQ(from_cache->at(w).rows, whole->at(w).rows) << w;
    EXPECT_EQ(from_cache->at(w).xtx, whole->at(w).xtx) << w;
    EXPECT_EQ(from_cache->at(w).mean_sq, whole->at(w).mean_sq) << w;
  }
  // A budget the values exceed gives no cache.
  auto over = AdvanceCachedValues(d.graph, RunValues(2), {}, (*cut)[1], *data, 2, 1);
  ASSERT_THAT(over, IsOk());
  EXPECT_FALSE(over->has_value());
}

QuantizeRequest Gptq(uint64_t cache_bytes, std::vector<std::string>* log) {
  QuantizeRequest req;
  req.config.scheme = *ParseWeightScheme("int4-g32-asym");
  req.config.algorithm = Algorithm::kGptq;
  req.config.calib_samples = 2;  // 16 windows
  req.calib_paths = {std::string(SLIMPACK_TINY_LLAMA_DIR) + "/calib_tokens.npy"};
  req.threads = 2;
  req.gptq_cache_bytes = cache_bytes;
  req.log = [log](const std::string& line) { log->push_back(line); };
  return req;
}

TEST(LayerCacheTest, GptqFromCachedValuesStoresTheBytesOfGptqFromTheInputs) {
  ir::Model cached = ::slimpack::testing::TinyLlamaCheckpoint();
  ir::Model uncached = ::slimpack::testing::TinyLlamaCheckpoint();
  std::vector<std::string> log_cached, log_uncached;
  ASSERT_THAT(QuantizeWeights(cached, Gptq(uint64_t{1} << 30, &log_cached)), IsOk());
  ASSERT_THAT(QuantizeWeights(uncached, Gptq(0, &log_uncached)), IsOk());
  // The cached run started layers 1-3 and lm_head from cached values; the
  // other dropped them (budget 0) and ran every group from the inputs.
  int from_cache = 0, from_inputs = 0;
  for (const std::string& l : log_cached) {
    if (l.find("capturing X^T X") == std::string::npos) continue;
    (l.find("from the model inputs") != std::string::npos ? from_inputs : from_cache)++;
  }
  EXPECT_EQ(from_cache, 4);
  EXPECT_EQ(from_inputs, 1);
  bool dropped = false;
  for (const std::string& l : log_uncached) dropped = dropped || l.find("exceed 0 bytes") != std::string::npos;
  EXPECT_TRUE(dropped);
  ASSERT_EQ(cached.graph.initializers().size(), uncached.graph.initializers().size());
  int quantized = 0;
  for (size_t i = 0; i < cached.graph.initializers().size(); ++i) {
    const ir::Tensor& x = cached.graph.initializers()[i];
    const ir::Tensor& y = uncached.graph.initializers()[i];
    ASSERT_EQ(x.name, y.name);
    ASSERT_EQ(x.data.size(), y.data.size()) << x.name;
    EXPECT_EQ(std::memcmp(x.data.data(), y.data.data(), x.data.size()), 0) << x.name;
    EXPECT_TRUE(x.quant == y.quant) << x.name;
    quantized += x.quant.quantized() ? 1 : 0;
  }
  EXPECT_EQ(quantized, 4 * 7 + 2);  // every linear, lm_head and the embedding (rtn)
}

}  // namespace
}  // namespace slimpack::quantize
