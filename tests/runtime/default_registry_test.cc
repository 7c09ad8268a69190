// The interpreter's default registry runs the slimpack.* ops the passes emit
// (fused and packed-weight ops), so an artifact holding them runs in every
// command without the caller registering anything. Each fused op is checked
// against the unfused ONNX graph it replaces: same bits.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/interpreter.h"
#include "runtime/kernel_registry.h"
#include "runtime/kernels/conv_blocked.h"
#include "runtime/kernels/fused_kernels.h"
#include "runtime/kernels/packed_kernels.h"
#include "tests/runtime/op_test_util.h"

namespace slimpack::runtime {
namespace {

ir::Node MakeNode(std::string op, std::string domain, std::vector<std::string> in,
                  std::vector<std::string> out) {
  ir::Node n;
  n.name = op + "_0";
  n.op_type = std::move(op);
  n.domain = std::move(domain);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

ir::Graph OneInputGraph(std::vector<ir::Node> nodes, std::vector<int64_t> dims) {
  ir::Graph g;
  g.name = "g";
  g.inputs.push_back({"x", ir::DType::kF32, ir::Shape::FromDims(dims)});
  g.outputs.push_back({"y", ir::DType::kUndefined, ir::Shape()});
  g.nodes = std::move(nodes);
  return g;
}

std::vector<float> RunDefault(const ir::Graph& g, const RtTensor& x) {
  InterpreterOptions opts;  // no kernels: the default registry
  auto interp = Interpreter::Create(g, opts);
  EXPECT_TRUE(interp.ok()) << interp.status();
  if (!interp.ok()) return {};
  auto out = interp->Run({{"x", x}});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  return (*out)[0].ToVector<float>();
}

TEST(DefaultRegistryTest, ListsEverySlimpackOp) {
  const KernelRegistry reg = BuiltinKernels();
  for (const char* op : {"FusedConv", "FusedGemm", "Gelu", "LayerNormGelu", "RMSNorm", "SiLU",
                         "HardSwish", "Attention", "MatMulAdd", kMatMulQOp, kGatherQOp}) {
    EXPECT_NE(reg.Find(kSlimpackDomain, op), nullptr) << op;
  }
  // The ONNX set is still there, and the slimpack names do not leak into it.
  EXPECT_NE(reg.Find("", "Conv"), nullptr);
  EXPECT_EQ(reg.Find("", "SiLU"), nullptr);
}

TEST(DefaultRegistryTest, FusedSiluRunsAndMatchesUnfusedBits) {
  const RtTensor x = testing::F32({2, 5}, testing::Random(10, 7, -4.0f, 4.0f));
  const ir::Graph fused =
      OneInputGraph({MakeNode("SiLU", kSlimpackDomain, {"x"}, {"y"})}, {2, 5});
  const ir::Graph unfused = OneInputGraph(
      {MakeNode("Sigmoid", "", {"x"}, {"s"}), MakeNode("Mul", "", {"x", "s"}, {"y"})}, {2, 5});
  const std::vector<float> a = RunDefault(fused, x);
  const std::vector<float> b = RunDefault(unfused, x);
  ASSERT_EQ(a.size(), 10u);
  ASSERT_EQ(b.size(), 10u);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(DefaultRegistryTest, FusedConvWithReluMatchesUnfusedBits) {
  const std::vector<float> w = testing::Random(3 * 2 * 3 * 3, 11);
  const std::vector<float> x_values = testing::Random(1 * 2 * 6 * 6, 12);
  const RtTensor x = testing::F32({1, 2, 6, 6}, x_values);
  auto conv_graph = [&](bool fused) {
    std::vector<ir::Node> nodes;
    if (fused) {
      ir::Node n = MakeNode("FusedConv", kSlimpackDomain, {"x", "w"}, {"y"});
      n.attributes["activation"] = ir::Attribute::String("Relu");
      nodes.push_back(std::move(n));
    } else {
      nodes.push_back(MakeNode("Conv", "", {"x", "w"}, {"c"}));
      nodes.push_back(MakeNode("Relu", "", {"c"}, {"y"}));
    }
    ir::Graph g = OneInputGraph(std::move(nodes), {1, 2, 6, 6});
    EXPECT_TRUE(g.AddInitializer(testing::IrTensor<float>("w", {3, 2, 3, 3}, w)).ok());
    return g;
  };
  const std::vector<float> a = RunDefault(conv_graph(true), x);
  const std::vector<float> b = RunDefault(conv_graph(false), x);
  ASSERT_EQ(a.size(), 3u * 4 * 4);
  ASSERT_EQ(b.size(), a.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  bool any_positive = false;
  for (float v : a) any_positive |= v > 0.0f;
  EXPECT_TRUE(any_positive);  // the Relu did not zero everything
}

// The 24 -> 32 channel 3 x 3 convolution of a 9 x 9 map (pads 1) that the
// blocked-kernel tests below run: a shape the channel-blocked kernel takes.
kernels::Conv2DShape BlockedCase() {
  kernels::Conv2DShape s;
  s.channels = 24;
  s.height = s.width = s.out_h = s.out_w = 9;
  s.out_channels = 32;
  s.kernel_h = s.kernel_w = 3;
  s.pad_top = s.pad_left = 1;
  return s;
}

// FusedConv with Relu where the channel-blocked kernel runs (a constant W
// of a shape it takes): Relu is applied in the tile's store, and must give
// the Relu kernel's bits after a plain Conv — negative sums +0, NaN kept
// (an input NaN reaches the outputs whose windows hold it), at one and
// three threads.
TEST(DefaultRegistryTest, FusedConvReluInTheBlockedStoreMatchesConvThenRelu) {
  const std::vector<int64_t> xd = {1, 24, 9, 9}, wd = {32, 24, 3, 3};
  std::vector<float> x_values = testing::Random(24 * 81, 31);
  x_values[5 * 81 + 4 * 9 + 4] = std::numeric_limits<float>::quiet_NaN();
  const RtTensor x = testing::F32(xd, x_values);
  const kernels::Conv2DShape s = BlockedCase();
  // The case is the blocked kernel's wherever the CPU has a direct kernel.
  EXPECT_EQ(kernels::BlockedConv2DPreferred(s), kernels::DirectConv2DSupported(s));
  auto graph = [&](bool fused) {
    std::vector<ir::Node> nodes;
    if (fused) {
      ir::Node n = MakeNode("FusedConv", kSlimpackDomain, {"x", "w", "b"}, {"y"});
      n.attributes["activation"] = ir::Attribute::String("Relu");
      n.attributes["pads"] = ir::Attribute::Ints({1, 1, 1, 1});
      nodes.push_back(std::move(n));
    } else {
      ir::Node n = MakeNode("Conv", "", {"x", "w", "b"}, {"c"});
      n.attributes["pads"] = ir::Attribute::Ints({1, 1, 1, 1});
      nodes.push_back(std::move(n));
      nodes.push_back(MakeNode("Relu", "", {"c"}, {"y"}));
    }
    ir::Graph g = OneInputGraph(std::move(nodes), xd);
    EXPECT_TRUE(g.AddInitializer(testing::IrTensor<float>("w", wd, testing::Random(32 * 216, 32)))
                    .ok());
    EXPECT_TRUE(g.AddInitializer(testing::IrTensor<float>("b", {32}, testing::Random(32, 33))).ok());
    return g;
  };
  for (int threads : {1, 3}) {
    InterpreterOptions options;
    options.num_threads = threads;
    std::vector<std::vector<float>> outs;
    for (bool fused : {true, false}) {
      const int64_t packs_before = kernels::BlockedConvWeightsPackCount();
      auto interp = Interpreter::Create(graph(fused), options);
      ASSERT_TRUE(interp.ok()) << interp.status();
      auto out = interp->Run({{"x", x}});
      ASSERT_TRUE(out.ok()) << out.status();
      outs.push_back((*out)[0].ToVector<float>());
      // Both graphs run the blocked kernel wherever the CPU has one.
      EXPECT_EQ(kernels::BlockedConvWeightsPackCount() - packs_before,
                kernels::BlockedConv2DPreferred(s) ? 1 : 0);
    }
    ASSERT_EQ(outs[0].size(), 32u * 81);
    ASSERT_EQ(outs[1].size(), outs[0].size());
    EXPECT_EQ(std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)), 0)
        << threads << " threads";
    int64_t nans = 0, zeros = 0, positive = 0;
    for (float v : outs[0]) {
      nans += std::isnan(v);
      zeros += v == 0.0f && !std::signbit(v);
      positive += v > 0.0f;
    }
    EXPECT_EQ(nans, 32 * 9) << "every channel's 3 x 3 outputs around the NaN input";
    EXPECT_GT(zeros, 0);
    EXPECT_GT(positive, 0);
    EXPECT_EQ(nans + zeros + positive, 32 * 81) << "no negative value and no -0";
  }
}

// A sum of products that underflow to -0 is -0 (each fused multiply-add
// rounds a tiny negative exact value to -0, and -0 + -0 = -0); Relu makes
// it +0. The blocked store must too (an unordered not-less-than compare
// would keep -0).
TEST(DefaultRegistryTest, FusedConvReluInTheBlockedStoreTurnsMinusZeroToPlusZero) {
  const std::vector<int64_t> xd = {1, 16, 5, 5}, wd = {16, 16, 3, 3};
  auto graph = [&](bool fused) {
    ir::Node n = fused ? MakeNode("FusedConv", kSlimpackDomain, {"x", "w"}, {"y"})
                       : MakeNode("Conv", "", {"x", "w"}, {"y"});
    if (fused) n.attributes["activation"] = ir::Attribute::String("Relu");
    ir::Graph g = OneInputGraph({n}, xd);
    EXPECT_TRUE(g.AddInitializer(testing::IrTensor<float>(
                                     "w", wd, std::vector<float>(16 * 16 * 9, -1e-30f)))
                    .ok());
    return g;
  };
  const RtTensor x = testing::F32(xd, std::vector<float>(16 * 25, 1e-30f));
  for (bool fused : {false, true}) {
    auto interp = Interpreter::Create(graph(fused), InterpreterOptions());
    ASSERT_TRUE(interp.ok()) << interp.status();
    auto out = interp->Run({{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<float> y = (*out)[0].ToVector<float>();
    ASSERT_EQ(y.size(), 16u * 9);
    int64_t minus_zero = 0, plus_zero = 0;
    for (float v : y) {
      minus_zero += v == 0.0f && std::signbit(v);
      plus_zero += v == 0.0f && !std::signbit(v);
    }
    EXPECT_EQ(fused ? plus_zero : minus_zero, 16 * 9) << (fused ? "FusedConv Relu" : "Conv");
  }
}

// FusedConv's Relu and HardSwish are applied as each convolution kernel
// stores its outputs: the channel-blocked kernel (constant W), the direct
// one (W fed at run time), the depthwise one, and after im2col + GEMM (a
// 3-D convolution, which no direct kernel takes). Each must give the bits
// of a plain Conv followed by the activation's own node, at one and three
// threads: outputs span HardSwish's three pieces (sums of up to 216
// products of values in [-2, 2]), and a NaN input reaches the outputs whose
// windows hold it (NaN stays NaN; negative HardSwish outputs are -0 or
// negative, Relu's +0).
TEST(DefaultRegistryTest, FusedConvActivationInEveryKernelMatchesConvThenActivation) {
  struct Path {
    const char* name;
    std::vector<int64_t> xd, wd;
    int64_t group;
    bool w_constant;
  };
  const std::vector<Path> paths = {
      // 20-wide rows: the blocked kernel's first tiles of a row store
      // through its in-register transposes (on AVX-512 and AVX2), the last
      // through its copy loop.
      {"blocked", {1, 24, 9, 20}, {32, 24, 3, 3}, 1, true},
      {"direct", {1, 24, 9, 20}, {32, 24, 3, 3}, 1, false},
      {"depthwise", {1, 40, 11, 13}, {40, 1, 3, 3}, 40, true},
      {"im2col_3d", {1, 6, 5, 6, 7}, {20, 6, 3, 3, 3}, 1, true},
  };
  for (const Path& path : paths) {
    const size_t rank = path.xd.size() - 2;
    int64_t x_count = 1, w_count = 1;
    for (int64_t d : path.xd) x_count *= d;
    for (int64_t d : path.wd) w_count *= d;
    std::vector<float> x_values = testing::Random(x_count, 41, -2.0f, 2.0f);
    x_values[x_count / 2] = std::numeric_limits<float>::quiet_NaN();
    const RtTensor x = testing::F32(path.xd, x_values);
    const std::vector<float> w_values = testing::Random(w_count, 42, -2.0f, 2.0f);
    const RtTensor w = testing::F32(path.wd, w_values);
    const int64_t m = path.wd[0];
    for (const char* act : {"Relu", "HardSwish"}) {
      auto graph = [&](bool fused) {
        std::vector<ir::Node> nodes;
        ir::Node n = fused ? MakeNode("FusedConv", kSlimpackDomain, {"x", "w", "b"}, {"y"})
                           : MakeNode("Conv", "", {"x", "w", "b"}, {"c"});
        n.attributes["pads"] = ir::Attribute::Ints(std::vector<int64_t>(2 * rank, 1));
        n.attributes["group"] = ir::Attribute::Int(path.group);
        if (fused) n.attributes["activation"] = ir::Attribute::String(act);
        nodes.push_back(std::move(n));
        if (!fused) nodes.push_back(MakeNode(act, "", {"c"}, {"y"}));
        ir::Graph g = OneInputGraph(std::move(nodes), path.xd);
        if (path.w_constant) {
          EXPECT_TRUE(g.AddInitializer(testing::IrTensor<float>("w", path.wd, w_values)).ok());
        } else {
          g.inputs.push_back({"w", ir::DType::kF32, ir::Shape::FromDims(path.wd)});
        }
        EXPECT_TRUE(
            g.AddInitializer(testing::IrTensor<float>("b", {m}, testing::Random(m, 43))).ok());
        return g;
      };
      for (int threads : {1, 3}) {
        InterpreterOptions options;
        options.num_threads = threads;
        std::vector<std::vector<float>> outs;
        for (bool fused : {true, false}) {
          auto interp = Interpreter::Create(graph(fused), options);
          ASSERT_TRUE(interp.ok()) << interp.status();
          std::map<std::string, RtTensor> feeds = {{"x", x}};
          if (!path.w_constant) feeds.emplace("w", w);
          auto out = interp->Run(feeds);
          ASSERT_TRUE(out.ok()) << out.status();
          outs.push_back((*out)[0].ToVector<float>());
        }
        const std::string where =
            std::string(path.name) + " " + act + " at " + std::to_string(threads) + " threads";
        ASSERT_EQ(outs[0].size(), outs[1].size()) << where;
        EXPECT_EQ(std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)), 0)
            << where;
        int64_t nans = 0, negative_or_zero = 0, between = 0, above = 0;
        for (float v : outs[0]) {
          nans += std::isnan(v);
          negative_or_zero += v <= 0.0f;
          between += v > 0.0f && v < 3.0f;
          above += v >= 3.0f;
        }
        EXPECT_GT(nans, 0) << where;
        EXPECT_GT(negative_or_zero, 0) << where;
        EXPECT_GT(between, 0) << where;
        EXPECT_GT(above, 0) << where;
      }
    }
  }
}

// A Conv whose W is a constant of the plan runs the channel-blocked kernel
// on weights packed on the first run and kept in the node's cache, also as
// a FusedConv's inner Conv: packed once per interpreter, every run gives the
// bytes of the same graph with W fed as an input (never packed:
// DirectConv2D), and with W both an initializer and a graph input nothing
// is packed and the fed value is what runs.
TEST(DefaultRegistryTest, ConstantConvWeightsRunPackedWithTheFedWeightsBits) {
  const std::vector<int64_t> xd = {1, 24, 9, 9}, wd = {32, 24, 3, 3};
  const std::vector<float> w0 = testing::Random(32 * 24 * 9, 21);
  const std::vector<float> w1 = testing::Random(32 * 24 * 9, 22);
  const std::vector<float> bias = testing::Random(32, 23);
  const RtTensor x = testing::F32(xd, testing::Random(24 * 81, 24));
  const kernels::Conv2DShape s = BlockedCase();
  // The blocked kernel is the one this shape takes where there is a direct
  // kernel at all, so the runs below exercise it.
  EXPECT_EQ(kernels::BlockedConv2DPreferred(s), kernels::DirectConv2DSupported(s));
  for (bool fused : {false, true}) {
    auto graph = [&](bool w_initializer, bool w_input) {
      ir::Node n = fused ? MakeNode("FusedConv", kSlimpackDomain, {"x", "w", "b"}, {"y"})
                         : MakeNode("Conv", "", {"x", "w", "b"}, {"y"});
      n.attributes["pads"] = ir::Attribute::Ints({1, 1, 1, 1});
      if (fused) n.attributes["activation"] = ir::Attribute::String("Relu");
      ir::Graph g = OneInputGraph({n}, xd);
      if (w_input) g.inputs.push_back({"w", ir::DType::kF32, ir::Shape::FromDims(wd)});
      if (w_initializer) {
        EXPECT_TRUE(g.AddInitializer(testing::IrTensor<float>("w", wd, w0)).ok());
      }
      EXPECT_TRUE(g.AddInitializer(testing::IrTensor<float>("b", {32}, bias)).ok());
      return g;
    };
    const int64_t packs_before_fed = kernels::BlockedConvWeightsPackCount();
    auto fed = [&](const std::vector<float>& w) {
      auto interp = Interpreter::Create(graph(false, true), InterpreterOptions());
      EXPECT_TRUE(interp.ok()) << interp.status();
      auto out = interp->Run({{"x", x}, {"w", testing::F32(wd, w)}});
      EXPECT_TRUE(out.ok()) << out.status();
      return out.ok() ? (*out)[0].ToVector<float>() : std::vector<float>();
    };
    const std::vector<float> want0 = fed(w0), want1 = fed(w1);
    ASSERT_EQ(want0.size(), 32u * 81);
    EXPECT_EQ(kernels::BlockedConvWeightsPackCount(), packs_before_fed)
        << "a fed W is never packed";
    auto same_bytes = [](const RtTensor& got, const std::vector<float>& want) {
      return got.num_elements() == static_cast<int64_t>(want.size()) &&
             std::memcmp(got.data<float>(), want.data(), want.size() * sizeof(float)) == 0;
    };
    for (bool overridable : {false, true}) {
      SCOPED_TRACE(std::string(fused ? "FusedConv" : "Conv") +
                   (overridable ? ", w also a graph input" : ", w an initializer only"));
      const int64_t packs_before = kernels::BlockedConvWeightsPackCount();
      auto interp = Interpreter::Create(graph(true, overridable), InterpreterOptions());
      ASSERT_TRUE(interp.ok()) << interp.status();
      for (int run = 0; run < 3; ++run) {  // later runs read the packed weights
        auto out = interp->Run({{"x", x}});
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_TRUE(same_bytes((*out)[0], want0)) << "run " << run;
      }
      const bool packs = !overridable && kernels::BlockedConv2DPreferred(s);
      EXPECT_EQ(kernels::BlockedConvWeightsPackCount() - packs_before, packs ? 1 : 0);
      if (overridable) {
        auto out = interp->Run({{"x", x}, {"w", testing::F32(wd, w1)}});
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_TRUE(same_bytes((*out)[0], want1));
      }
    }
  }
}

}  // namespace
}  // namespace slimpack::runtime
