// Tests for ONNX-graph channel pruning (prune/graph/prune_graph*.h, prune_onnx.h):
// the whole group listing and the whole pruned graph for small graphs
// (chain with BatchNorm, residual sum, concat, depthwise, grouped conv,
// Flatten -> Gemm, a graph output), outputs unchanged when an all-zero
// channel is removed, ratio 0 as a no-op, verifier + interpreter runs.
#include <cmath>
#include <cstring>
#include <map>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "formats/numpy/numpy_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prune/graph/prune_graph.h"
#include "prune/graph/prune_graph_apply.h"
#include "prune/graph/prune_onnx.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::prune {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using namespace ::slimpack::passes::testing;

struct T {
  std::vector<int64_t> dims;
  std::vector<float> v;
};
using Tensors = std::map<std::string, T>;

int64_t Numel(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

// Values whose channel c (along `axis`) is scaled by scale[c]: lets a test
// decide which channels are the least important.
T Make(std::vector<int64_t> dims, uint32_t seed, int axis, const std::vector<float>& scale,
       float lo = -1, float hi = 1) {
  T t{dims, RandomFloats(Numel(dims), seed, lo, hi)};
  int64_t inner = 1;
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  for (int64_t i = 0; i < Numel(dims); ++i) t.v[i] *= scale[(i / inner) % dims[axis]];
  return t;
}

// Independent slicing for expected graphs: keeps `keep` along `axis`, each
// index standing for `width` consecutive indices.
T Keep(const T& t, int axis, const std::vector<int64_t>& keep, int64_t width = 1) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= t.dims[i];
  for (size_t i = axis + 1; i < t.dims.size(); ++i) inner *= t.dims[i];
  T out{t.dims, {}};
  out.dims[axis] = static_cast<int64_t>(keep.size()) * width;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : keep)
      for (int64_t w = 0; w < width; ++w)
        for (int64_t r = 0; r < inner; ++r)
          out.v.push_back(t.v[(o * t.dims[axis] + k * width + w) * inner + r]);
  return out;
}

std::string Dims(const std::vector<int64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s;
}

ir::Model Build(const std::string& sig, const Tensors& ts, const std::string& body) {
  std::string text = "<ir_version: 8, opset_import: [\"\" : 17]>\n" + sig + " {\n";
  for (const auto& [name, t] : ts) {
    text += "  " + name + " = Constant <value = float[" + Dims(t.dims) + "] {" + FloatList(t.v) +
            "}> ()\n";
  }
  return ImportText(text + body + "}\n");
}

std::string Groups(const ir::Graph& g) {
  auto groups = BuildChannelGroups(g);
  EXPECT_THAT(groups.status(), IsOk());
  return groups.ok() ? FormatChannelGroups(*groups) : "";
}

PruneOptions Ratio(double r, Criterion c = Criterion::kL1) {
  PruneOptions o;
  o.ratio = r;
  o.criterion = c;
  return o;
}

const std::vector<float> kWeakOdd = {1, 0.01f, 1, 0.01f};

// x -> Conv c1 -> BN -> Relu -> Conv c2 (1x1) -> y.
struct Chain {
  Tensors ts;
  std::string sig = "g (float[1,2,5,5] x) => (float[1,3,5,5] y)";
  std::string body = R"(
  c1 = Conv <pads = [1, 1, 1, 1]> (x, w1, b1)
  bn = BatchNormalization <epsilon = 0.001> (c1, s, bb, m, v)
  r = Relu (bn)
  y = Conv (r, w2, b2)
)";
  Chain() {
    ts["w1"] = Make({4, 2, 3, 3}, 1, 0, kWeakOdd);
    ts["b1"] = Make({4}, 2, 0, kWeakOdd);
    ts["s"] = Make({4}, 3, 0, kWeakOdd, 0.5f, 1.5f);
    ts["bb"] = Make({4}, 4, 0, kWeakOdd);
    ts["m"] = Make({4}, 5, 0, kWeakOdd);
    ts["v"] = Make({4}, 6, 0, kWeakOdd, 0.5f, 2.0f);
    ts["w2"] = Make({3, 4, 1, 1}, 7, 1, kWeakOdd);
    ts["b2"] = Make({3}, 8, 0, {1, 1, 1});
  }
};

TEST(PruneGraphTest, ChainConvBnReluConvGroups) {
  Chain c;
  ir::Model m = Build(c.sig, c.ts, c.body);
  EXPECT_EQ(Groups(m.graph),
            "group c1 (4 channels): prunable\n"
            "  w1 axis 0 [0,4) offset 0 width 1 output\n"
            "  b1 axis 0 [0,4) offset 0 width 1 vector\n"
            "  s axis 0 [0,4) offset 0 width 1 vector\n"
            "  bb axis 0 [0,4) offset 0 width 1 vector\n"
            "  m axis 0 [0,4) offset 0 width 1 vector\n"
            "  v axis 0 [0,4) offset 0 width 1 vector\n"
            "  w2 axis 1 [0,4) offset 0 width 1 input\n"
            "group y (3 channels): unprunable: reaches graph output 'y'\n"
            "  w2 axis 0 [0,3) offset 0 width 1 output\n"
            "  b2 axis 0 [0,3) offset 0 width 1 vector\n");
}

TEST(PruneGraphTest, ChainPrunesWeakChannelsEverywhere) {
  Chain c;
  ir::Model m = Build(c.sig, c.ts, c.body);
  auto r = PruneGraph(m, Ratio(0.5));
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_TRUE(r->changed);
  Tensors e = c.ts;
  const std::vector<int64_t> keep = {0, 2};
  for (const char* n : {"w1", "b1", "s", "bb", "m", "v"}) e[n] = Keep(c.ts[n], 0, keep);
  e["w2"] = Keep(c.ts["w2"], 1, keep);
  ir::Model expected = Build(c.sig, e, c.body);
  EXPECT_EQ(ir::PrintGraph(m.graph), ir::PrintGraph(expected.graph));
  EXPECT_EQ(r->params_before, 72u + 4 * 5 + 12 + 3);
  EXPECT_EQ(r->params_after, 36u + 2 * 5 + 6 + 3);
  ASSERT_EQ(r->groups.size(), 2u);
  EXPECT_EQ(r->groups[0].kept, 2);
  EXPECT_EQ(r->groups[1].kept, 3);
  EXPECT_EQ(r->unprunable, std::vector<std::string>{"group y: reaches graph output 'y'"});
  // Runs, and a second analysis finds the pruned sizes.
  EXPECT_EQ(Evaluate(m.graph, RandomInputs(m.graph, 3))[0].size(), 75u);
  EXPECT_THAT(Groups(m.graph), HasSubstr("group c1 (2 channels): prunable\n"));
}

TEST(PruneGraphTest, RatioZeroIsAnExactNoOp) {
  Chain c;
  ir::Model m = Build(c.sig, c.ts, c.body);
  const std::string before = ir::PrintGraph(m.graph);
  const uint8_t* w1 = m.graph.FindInitializer("w1")->data.data();
  auto r = PruneGraph(m, Ratio(0));
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(ir::PrintGraph(m.graph), before);
  EXPECT_EQ(m.graph.FindInitializer("w1")->data.data(), w1);  // not even rewritten
  // A ratio below one channel per group removes nothing either.
  r = PruneGraph(m, Ratio(0.2));
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(ir::PrintGraph(m.graph), before);
}

TEST(PruneGraphTest, RejectsBadRatioAndActivationWithoutData) {
  Chain c;
  ir::Model m = Build(c.sig, c.ts, c.body);
  EXPECT_THAT(PruneGraph(m, Ratio(1.0)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[0, 1)")));
  EXPECT_THAT(PruneGraph(m, Ratio(0.5, Criterion::kActivation)).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--calib")));
  PruneOptions refit = Ratio(0.5);
  refit.refit = true;
  EXPECT_THAT(PruneGraph(m, refit).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--prune-refit")));
}

// Residual: two convs summed prune together.
TEST(PruneGraphTest, ResidualBranchesPruneTogether) {
  Tensors ts;
  ts["wa"] = Make({4, 2, 1, 1}, 11, 0, kWeakOdd);
  ts["wb"] = Make({4, 2, 3, 3}, 12, 0, kWeakOdd);
  ts["bb"] = Make({4}, 13, 0, kWeakOdd);
  ts["wc"] = Make({3, 4, 1, 1}, 14, 1, kWeakOdd);
  const std::string sig = "g (float[1,2,4,4] x) => (float[1,3,4,4] y)";
  const std::string body = R"(
  a = Conv (x, wa)
  b = Conv <pads = [1, 1, 1, 1]> (x, wb, bb)
  s = Add (a, b)
  r = Relu (s)
  y = Conv (r, wc)
)";
  ir::Model m = Build(sig, ts, body);
  EXPECT_EQ(Groups(m.graph),
            "group a+b (4 channels): prunable\n"
            "  wa axis 0 [0,4) offset 0 width 1 output\n"
            "  wc axis 1 [0,4) offset 0 width 1 input\n"
            "  wb axis 0 [0,4) offset 0 width 1 output\n"
            "  bb axis 0 [0,4) offset 0 width 1 vector\n"
            "group y (3 channels): unprunable: reaches graph output 'y'\n"
            "  wc axis 0 [0,3) offset 0 width 1 output\n");
  ASSERT_THAT(PruneGraph(m, Ratio(0.5, Criterion::kL2)).status(), IsOk());
  Tensors e = ts;
  for (const char* n : {"wa", "wb", "bb"}) e[n] = Keep(ts[n], 0, {0, 2});
  e["wc"] = Keep(ts["wc"], 1, {0, 2});
  EXPECT_EQ(ir::PrintGraph(m.graph), ir::PrintGraph(Build(sig, e, body).graph));
}

// A residual sum with the block input (fixed channels) is not prunable.
TEST(PruneGraphTest, ResidualWithGraphInputIsUnprunable) {
  Tensors ts;
  ts["wa"] = Make({2, 2, 1, 1}, 21, 0, {1, 1});
  const std::string sig = "g (float[1,2,4,4] x) => (float[1,2,4,4] y)";
  ir::Model m = Build(sig, ts, "  a = Conv (x, wa)\n  s = Add (a, x)\n  y = Relu (s)\n");
  EXPECT_EQ(Groups(m.graph),
            "group a (2 channels): unprunable: Add 's' combines channels with 'x', which is "
            "neither traced nor a constant; reaches graph output 'y'\n"
            "  wa axis 0 [0,2) offset 0 width 1 output\n");
}

TEST(PruneGraphTest, ConcatOffsets) {
  Tensors ts;
  ts["wa"] = Make({4, 2, 1, 1}, 31, 0, kWeakOdd);
  ts["wb"] = Make({2, 2, 1, 1}, 32, 0, {1, 1});
  ts["wc"] = Make({3, 6, 1, 1}, 33, 1, {1, 0.01f, 1, 0.01f, 1, 1});
  const std::string sig = "g (float[1,2,4,4] x) => (float[1,3,4,4] y)";
  const std::string body = R"(
  a = Conv (x, wa)
  b = Conv (x, wb)
  cat = Concat <axis = 1> (a, b)
  y = Conv (cat, wc)
)";
  ir::Model m = Build(sig, ts, body);
  EXPECT_EQ(Groups(m.graph),
            "group a (4 channels): prunable\n"
            "  wa axis 0 [0,4) offset 0 width 1 output\n"
            "  wc axis 1 [0,4) offset 0 width 1 input\n"
            "group b (2 channels): prunable\n"
            "  wb axis 0 [0,2) offset 0 width 1 output\n"
            "  wc axis 1 [0,2) offset 4 width 1 input\n"
            "group y (3 channels): unprunable: reaches graph output 'y'\n"
            "  wc axis 0 [0,3) offset 0 width 1 output\n");
  ASSERT_THAT(PruneGraph(m, Ratio(0.5)).status(), IsOk());
  Tensors e = ts;
  e["wa"] = Keep(ts["wa"], 0, {0, 2});
  // b keeps the more important of its two channels.
  const T& wb = ts["wb"];
  const T& wc = ts["wc"];
  double l1[2] = {0, 0};
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < 2; ++i) l1[c] += std::fabs(wb.v[c * 2 + i]);
    for (int o = 0; o < 3; ++o) l1[c] += std::fabs(wc.v[o * 6 + 4 + c]);
  }
  const int64_t kb = l1[1] > l1[0] ? 1 : 0;
  e["wb"] = Keep(wb, 0, {kb});
  e["wc"] = Keep(wc, 1, {0, 2, 4 + kb});
  EXPECT_EQ(ir::PrintGraph(m.graph), ir::PrintGraph(Build(sig, e, body).graph));
}

TEST(PruneGraphTest, DepthwiseCouplesInputAndOutputChannel) {
  Tensors ts;
  ts["w1"] = Make({4, 2, 1, 1}, 41, 0, kWeakOdd);
  ts["wd"] = Make({4, 1, 3, 3}, 42, 0, kWeakOdd);
  ts["bd"] = Make({4}, 43, 0, kWeakOdd);
  ts["w2"] = Make({3, 4, 1, 1}, 44, 1, kWeakOdd);
  const std::string sig = "g (float[1,2,4,4] x) => (float[1,3,4,4] y)";
  auto body = [](int groups) {
    return "  a = Conv (x, w1)\n  d = Conv <group = " + std::to_string(groups) +
           ", pads = [1, 1, 1, 1]> (a, wd, bd)\n  r = Relu (d)\n  y = Conv (r, w2)\n";
  };
  ir::Model m = Build(sig, ts, body(4));
  EXPECT_EQ(Groups(m.graph),
            "group a (4 channels): prunable\n"
            "  w1 axis 0 [0,4) offset 0 width 1 output\n"
            "  wd axis 0 [0,4) offset 0 width 1 output\n"
            "  bd axis 0 [0,4) offset 0 width 1 vector\n"
            "  w2 axis 1 [0,4) offset 0 width 1 input\n"
            "group y (3 channels): unprunable: reaches graph output 'y'\n"
            "  w2 axis 0 [0,3) offset 0 width 1 output\n");
  ASSERT_THAT(PruneGraph(m, Ratio(0.5)).status(), IsOk());
  Tensors e = ts;
  for (const char* n : {"w1", "wd", "bd"}) e[n] = Keep(ts[n], 0, {0, 2});
  e["w2"] = Keep(ts["w2"], 1, {0, 2});
  EXPECT_EQ(ir::PrintGraph(m.graph), ir::PrintGraph(Build(sig, e, body(2)).graph));
  EXPECT_THAT(ir::VerifyGraph(m.graph), IsOk());
  EXPECT_EQ(Evaluate(m.graph, RandomInputs(m.graph, 4))[0].size(), 48u);
}

TEST(PruneGraphTest, GroupedConvIsUnprunable) {
  Tensors ts;
  ts["w1"] = Make({4, 2, 1, 1}, 51, 0, kWeakOdd);
  ts["wg"] = Make({4, 2, 3, 3}, 52, 0, kWeakOdd);
  ts["w2"] = Make({3, 4, 1, 1}, 53, 1, kWeakOdd);
  const std::string sig = "g (float[1,2,4,4] x) => (float[1,3,4,4] y)";
  ir::Model m = Build(sig, ts,
                      "  a = Conv (x, w1)\n  gc = Conv <group = 2, pads = [1, 1, 1, 1]> (a, wg)\n"
                      "  y = Conv (gc, w2)\n");
  EXPECT_EQ(Groups(m.graph),
            "group a (4 channels): unprunable: grouped Conv 'gc' (group=2, not depthwise): "
            "whole groups are not pruned\n"
            "  w1 axis 0 [0,4) offset 0 width 1 output\n"
            "group gc (4 channels): unprunable: grouped Conv 'gc' (group=2): output channels "
            "must stay divisible by the group\n"
            "  wg axis 0 [0,4) offset 0 width 1 output\n"
            "  w2 axis 1 [0,4) offset 0 width 1 input\n"
            "group y (3 channels): unprunable: reaches graph output 'y'\n"
            "  w2 axis 0 [0,3) offset 0 width 1 output\n");
  const std::string before = ir::PrintGraph(m.graph);
  auto r = PruneGraph(m, Ratio(0.5));
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(ir::PrintGraph(m.graph), before);
}

TEST(PruneGraphTest, SplitCutsSegmentsAndResizes) {
  Tensors ts;
  ts["wa"] = Make({4, 2, 1, 1}, 101, 0, kWeakOdd);
  ts["wp"] = Make({2, 2, 1, 1}, 102, 1, {1, 0.01f});
  ts["wq"] = Make({2, 2, 1, 1}, 103, 1, {1, 0.01f});
  const std::string sig = "g (float[1,2,4,4] x) => (float[1,4,4,4] y)";
  auto body = [](const std::string& sizes) {
    return "  sp = Constant <value = int64[2] {" + sizes + "}> ()\n"
           "  a = Conv (x, wa)\n  p, q = Split <axis = 1> (a, sp)\n"
           "  yp = Conv (p, wp)\n  yq = Conv (q, wq)\n  y = Concat <axis = 1> (yp, yq)\n";
  };
  ir::Model m = Build(sig, ts, body("2, 2"));
  EXPECT_EQ(Groups(m.graph),
            "group a (4 channels): prunable\n"
            "  wa axis 0 [0,4) offset 0 width 1 output\n"
            "  wp axis 1 [0,2) offset 0 width 1 input\n"
            "  wq axis 1 [2,4) offset 0 width 1 input\n"
            "group yp (2 channels): unprunable: reaches graph output 'y'\n"
            "  wp axis 0 [0,2) offset 0 width 1 output\n"
            "group yq (2 channels): unprunable: reaches graph output 'y'\n"
            "  wq axis 0 [0,2) offset 0 width 1 output\n");
  ASSERT_THAT(PruneGraph(m, Ratio(0.5)).status(), IsOk());
  Tensors e = ts;
  e["wa"] = Keep(ts["wa"], 0, {0, 2});
  e["wp"] = Keep(ts["wp"], 1, {0});
  e["wq"] = Keep(ts["wq"], 1, {0});
  EXPECT_EQ(ir::PrintGraph(m.graph), ir::PrintGraph(Build(sig, e, body("1, 1")).graph));
  EXPECT_EQ(Evaluate(m.graph, RandomInputs(m.graph, 5))[0].size(), 64u);
}

// Flatten of [1,4,2,2] (static via value_info): channel c is Gemm inputs
// [4c, 4c+4).
TEST(PruneGraphTest, FlattenToGemmMapsChannelToSpatialRun) {
  Tensors ts;
  ts["w1"] = Make({4, 2, 3, 3}, 61, 0, kWeakOdd);
  ts["wf"] = Make({3, 16}, 62, 1, {1, 1, 1, 1, 0.01f, 0.01f, 0.01f, 0.01f, 1, 1, 1, 1, 0.01f,
                                   0.01f, 0.01f, 0.01f});
  ts["bf"] = Make({3}, 63, 0, {1, 1, 1});
  const std::string sig = "g (float[1,2,2,2] x) => (float[1,3] y) <float[1,4,2,2] a>";
  const std::string body = R"(
  a = Conv <pads = [1, 1, 1, 1]> (x, w1)
  f = Flatten (a)
  y = Gemm <transB = 1> (f, wf, bf)
)";
  ir::Model m = Build(sig, ts, body);
  EXPECT_EQ(Groups(m.graph),
            "group a (4 channels): prunable\n"
            "  w1 axis 0 [0,4) offset 0 width 1 output\n"
            "  wf axis 1 [0,4) offset 0 width 4 input\n"
            "group y (3 channels): unprunable: reaches graph output 'y'\n"
            "  wf axis 0 [0,3) offset 0 width 1 output\n"
            "  bf axis 0 [0,3) offset 0 width 1 vector\n");
  ASSERT_THAT(PruneGraph(m, Ratio(0.5)).status(), IsOk());
  Tensors e = ts;
  e["w1"] = Keep(ts["w1"], 0, {0, 2});
  e["wf"] = Keep(ts["wf"], 1, {0, 2}, 4);
  ir::Model expected =
      Build("g (float[1,2,2,2] x) => (float[1,3] y) <float[1,2,2,2] a>", e, body);
  EXPECT_EQ(ir::PrintGraph(m.graph), ir::PrintGraph(expected.graph));
  EXPECT_EQ(m.graph.value_info.at("a").shape.ToString(), "[1,2,2,2]");
}

TEST(PruneGraphTest, FlattenOfUnknownSpatialSizeIsUnprunable) {
  Tensors ts;
  ts["w1"] = Make({4, 2, 3, 3}, 61, 0, kWeakOdd);
  ts["wf"] = Make({3, 16}, 62, 1, std::vector<float>(16, 1));
  // H and W are symbolic: Flatten's output width depends on the input.
  ir::Model m = Build("g (float[1,2,H,W] x) => (float[1,3] y)", ts,
                      "  a = Conv <pads = [1, 1, 1, 1]> (x, w1)\n  f = Flatten (a)\n"
                      "  y = Gemm <transB = 1> (f, wf)\n");
  EXPECT_EQ(Groups(m.graph),
            "group a (4 channels): unprunable: Flatten 'f': the spatial size of 'a' is not "
            "static, so a channel's features are unknown\n"
            "  w1 axis 0 [0,4) offset 0 width 1 output\n"
            "group y (3 channels): unprunable: reaches graph output 'y'\n"
            "  wf axis 0 [0,3) offset 0 width 1 output\n");
}

TEST(PruneGraphTest, GraphOutputAndUnknownOpAreUnprunable) {
  Tensors ts;
  ts["w1"] = Make({4, 2, 1, 1}, 71, 0, kWeakOdd);
  ts["w2"] = Make({4, 2, 1, 1}, 72, 0, kWeakOdd);
  ir::Model m = Build("g (float[1,2,4,4] x) => (float[1,4,4,4] y, float[1,4,4,4] z)", ts,
                      "  a = Conv (x, w1)\n  y = Relu (a)\n  b = Conv (x, w2)\n"
                      "  z = Softmax <axis = 1> (b)\n");
  EXPECT_EQ(Groups(m.graph),
            "group a (4 channels): unprunable: reaches graph output 'y'\n"
            "  w1 axis 0 [0,4) offset 0 width 1 output\n"
            "group b (4 channels): unprunable: reaches Softmax 'z' through 'b', which is not "
            "followed\n"
            "  w2 axis 0 [0,4) offset 0 width 1 output\n");
}

// Removing a channel whose producing weights and bias are all zero (Relu of
// 0 is 0) leaves the outputs unchanged.
TEST(PruneGraphTest, ZeroChannelRemovalKeepsOutputs) {
  Tensors ts;
  ts["w1"] = Make({4, 2, 3, 3}, 81, 0, {1, 0, 1, 1});
  ts["b1"] = Make({4}, 82, 0, {1, 0, 1, 1});
  ts["w2"] = Make({3, 4, 3, 3}, 83, 1, {1, 1, 1, 1});
  ts["b2"] = Make({3}, 84, 0, {1, 1, 1});
  ts["wf"] = Make({5, 3}, 85, 1, {1, 1, 1});
  ir::Model m = Build("g (float[2,2,6,6] x) => (float[2,5] y)", ts, R"(
  c1 = Conv <pads = [1, 1, 1, 1]> (x, w1, b1)
  r1 = Relu (c1)
  c2 = Conv <pads = [1, 1, 1, 1], strides = [2, 2]> (r1, w2, b2)
  r2 = Relu (c2)
  p = GlobalAveragePool (r2)
  f = Flatten (p)
  y = Gemm <transB = 1> (f, wf)
)");
  auto inputs = RandomInputs(m.graph, 9);
  auto before = Evaluate(m.graph, inputs);
  ir::Graph original = m.graph;
  auto r = PruneGraph(m, Ratio(0.25, Criterion::kL2));
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_THAT(ir::VerifyGraph(m.graph), IsOk());
  EXPECT_EQ(m.graph.FindInitializer("w1")->dims, (std::vector<int64_t>{3, 2, 3, 3}));
  EXPECT_EQ(m.graph.FindInitializer("w2")->dims, (std::vector<int64_t>{3, 3, 3, 3}));
  EXPECT_EQ(m.graph.FindInitializer("wf")->dims, (std::vector<int64_t>{5, 3}));
  EXPECT_LE(MaxAbsDiff(before, Evaluate(m.graph, inputs)), 1e-6);
  // A 50 % prune does change the outputs (the bound above is not vacuous).
  ir::Model half;
  half.graph = original;
  ASSERT_THAT(PruneGraph(half, Ratio(0.5)).status(), IsOk());
  EXPECT_GT(MaxAbsDiff(before, Evaluate(half.graph, inputs)), 1e-3);
}

// x [N,6] -> MatMul w1 [6,8] -> Relu -> Gemm w2^T [3,8] -> y. Input feature 0
// is large (|x| < 10), the others tiny (|x| < 0.01); the odd hidden channels
// read feature 0 with small weights, the even ones read the tiny features
// with large weights. l1 keeps the even channels; activation (Wanda) the
// odd ones, which carry almost all of the output.
struct Mlp {
  Tensors ts;
  std::string sig = "g (float[N,6] x) => (float[N,3] y)";
  std::string body = "  h = MatMul (x, w1)\n  r = Relu (h)\n  y = Gemm <transB = 1> (r, w2)\n";
  std::vector<float> x;
  onnx_format::testing::ScratchDir dir;
  Mlp() {
    T w1{{6, 8}, RandomFloats(48, 91, 0.5f, 1.0f)};
    for (int j = 0; j < 6; ++j)
      for (int c = 0; c < 8; ++c) w1.v[j * 8 + c] *= (c % 2 == 1) == (j == 0) ? 0.5f : 0.0f;
    for (int c = 0; c < 8; c += 2)
      for (int j = 1; j < 6; ++j) w1.v[j * 8 + c] *= 4;  // 2..4 in total
    ts["w1"] = w1;
    ts["w2"] = Make({3, 8}, 92, 1, std::vector<float>(8, 1));
    x = RandomFloats(64 * 6, 93, -0.01f, 0.01f);
    for (int n = 0; n < 64; ++n) x[n * 6] *= 1000;
    ir::Tensor t;
    t.name = "x";
    t.dtype = ir::DType::kF32;
    t.dims = {64, 6};
    std::vector<uint8_t> bytes(x.size() * 4);
    std::memcpy(bytes.data(), x.data(), bytes.size());
    t.data = ir::TensorData::Owned(std::move(bytes));
    EXPECT_THAT(numpy::WriteNpy(dir.File("x.npy"), t), IsOk());
  }
  std::map<std::string, runtime::RtTensor> Inputs() const {
    return {{"x", runtime::RtTensor::FromVector<float>({64, 6}, x)}};
  }
  PruneOptions Options(Criterion c, bool refit, int threads = 1) const {
    PruneOptions o = Ratio(0.5, c);
    o.refit = refit;
    o.calib_paths = {dir.File("x.npy")};
    o.threads = threads;
    return o;
  }
};

TEST(PruneGraphTest, ActivationKeepsChannelsThatCarryTheSignal) {
  Mlp mlp;
  ir::Model l1 = Build(mlp.sig, mlp.ts, mlp.body);
  ir::Model act = Build(mlp.sig, mlp.ts, mlp.body);
  const auto before = Evaluate(l1.graph, mlp.Inputs());
  ASSERT_THAT(PruneGraph(l1, mlp.Options(Criterion::kL1, false)).status(), IsOk());
  ASSERT_THAT(PruneGraph(act, mlp.Options(Criterion::kActivation, false)).status(), IsOk());
  Tensors even = mlp.ts, odd = mlp.ts;
  even["w1"] = Keep(mlp.ts["w1"], 1, {0, 2, 4, 6});
  even["w2"] = Keep(mlp.ts["w2"], 1, {0, 2, 4, 6});
  odd["w1"] = Keep(mlp.ts["w1"], 1, {1, 3, 5, 7});
  odd["w2"] = Keep(mlp.ts["w2"], 1, {1, 3, 5, 7});
  EXPECT_EQ(ir::PrintGraph(l1.graph), ir::PrintGraph(Build(mlp.sig, even, mlp.body).graph));
  EXPECT_EQ(ir::PrintGraph(act.graph), ir::PrintGraph(Build(mlp.sig, odd, mlp.body).graph));
  EXPECT_LT(MaxAbsDiff(before, Evaluate(act.graph, mlp.Inputs())),
            0.1 * MaxAbsDiff(before, Evaluate(l1.graph, mlp.Inputs())));
}

// Refit of the Gemm on the calibration rows: a least-squares fit over the
// kept inputs, so its output error on those rows is below plain slicing's,
// and it is the same whatever the thread count.
TEST(PruneGraphTest, RefitReducesCalibrationErrorDeterministically) {
  Mlp mlp;
  // Dense random w1: the kept hidden channels are correlated with the
  // removed ones, so the refit Gemm can make up for part of them.
  mlp.ts["w1"] = Make({6, 8}, 94, 1, std::vector<float>(8, 1));
  ir::Model plain = Build(mlp.sig, mlp.ts, mlp.body);
  ir::Model refit = Build(mlp.sig, mlp.ts, mlp.body);
  ir::Model refit2 = Build(mlp.sig, mlp.ts, mlp.body);
  const auto before = Evaluate(plain.graph, mlp.Inputs());
  ASSERT_THAT(PruneGraph(plain, mlp.Options(Criterion::kL1, false)).status(), IsOk());
  auto r = PruneGraph(refit, mlp.Options(Criterion::kL1, true));
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_EQ(r->refit, std::vector<std::string>{"w2"});
  ASSERT_THAT(PruneGraph(refit2, mlp.Options(Criterion::kL1, true, 2)).status(), IsOk());
  EXPECT_EQ(ir::PrintGraph(refit.graph), ir::PrintGraph(refit2.graph));
  EXPECT_EQ(refit.graph.FindInitializer("w1")->dims, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(refit.graph.FindInitializer("w2")->dims, (std::vector<int64_t>{3, 4}));
  auto sq_err = [&](const ir::Graph& g) {
    auto out = Evaluate(g, mlp.Inputs());
    double e = 0;
    for (size_t i = 0; i < out[0].size(); ++i) e += std::pow(out[0][i] - before[0][i], 2);
    return e;
  };
  const double e_refit = sq_err(refit.graph), e_plain = sq_err(plain.graph);
  EXPECT_LT(e_refit, 0.9 * e_plain) << "refit " << e_refit << ", plain " << e_plain;
}

}  // namespace
}  // namespace slimpack::prune
