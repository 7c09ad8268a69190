// Interpreter as a whole: planning errors (unsupported ops, undefined
// values), input checks, an end-to-end conv net against a naive reference,
// thread-count independence, buffer reuse, the observer, If subgraphs and
// registry extension.
#include "runtime/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ir/float_convert.h"
#include "runtime/gemm.h"
#include "runtime/node_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_macros.h"
#include "tests/runtime/op_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::runtime::testing::ExpectFloats;
using ::slimpack::runtime::testing::F32;
using ::slimpack::runtime::testing::I64;
using ::slimpack::runtime::testing::IrTensor;
using ::slimpack::runtime::testing::Random;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using Attr = ir::Attribute;

using testing::MakeNode;

ir::ValueInfo Value(std::string name, ir::DType dtype, std::vector<int64_t> dims) {
  return {std::move(name), dtype, ir::Shape::FromDims(dims)};
}

TEST(InterpreterTest, UnsupportedOpsAreListedWithNodesAndSupportedOps) {
  ir::Graph g;
  g.name = "net";
  g.inputs.push_back(Value("x", ir::DType::kF32, {2}));
  g.nodes.push_back(MakeNode("relu", "Relu", {"x"}, {"a"}));
  g.nodes.push_back(MakeNode("fancy", "NonMaxSuppression", {"a"}, {"b"}));
  ir::Node custom = MakeNode("mine", "Frobnicate", {"b"}, {"c"});
  custom.domain = "com.example";
  g.nodes.push_back(custom);
  g.outputs.push_back(Value("c", ir::DType::kF32, {2}));
  auto interp = Interpreter::Create(g, {});
  EXPECT_THAT(interp, StatusIs(absl::StatusCode::kUnimplemented,
                               AllOf(HasSubstr("2 node(s) with unsupported ops"),
                                     HasSubstr("NonMaxSuppression (node 'fancy')"),
                                     HasSubstr("com.example:Frobnicate (node 'mine')"),
                                     HasSubstr("Supported ops: Abs, Acos, Acosh, Add, And, ArgMax"),
                                     HasSubstr("Conv, ConvInteger, ConvTranspose"))));
}

TEST(InterpreterTest, UnsupportedOpInsideSubgraphIsFound) {
  auto then_g = std::make_shared<ir::Graph>();
  then_g->name = "then";
  then_g->nodes.push_back(MakeNode("deep", "STFT", {"x"}, {"t"}));
  then_g->outputs.push_back(Value("t", ir::DType::kF32, {1}));
  auto else_g = std::make_shared<ir::Graph>(*then_g);
  ir::Graph g;
  g.inputs.push_back(Value("c", ir::DType::kBool, {}));
  g.inputs.push_back(Value("x", ir::DType::kF32, {1}));
  g.nodes.push_back(MakeNode("if", "If", {"c"}, {"y"},
                             {{"then_branch", Attr::GraphValue(then_g)},
                              {"else_branch", Attr::GraphValue(else_g)}}));
  g.outputs.push_back(Value("y", ir::DType::kF32, {1}));
  EXPECT_THAT(Interpreter::Create(g, {}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("STFT (node 'deep')")));
}

TEST(InterpreterTest, UndefinedValueNamesTheNode) {
  ir::Graph g;
  g.inputs.push_back(Value("x", ir::DType::kF32, {2}));
  g.nodes.push_back(MakeNode("add", "Add", {"x", "ghost"}, {"y"}));
  g.outputs.push_back(Value("y", ir::DType::kF32, {2}));
  EXPECT_THAT(Interpreter::Create(g, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'add' (Add) reads 'ghost', which no graph input")));
}

TEST(InterpreterTest, BadInitializerIsRejectedAtCreate) {
  ir::Graph g;
  ir::Tensor w = IrTensor<float>("w", {3}, {1, 2});  // 8 bytes for 3 floats
  ASSERT_THAT(g.AddInitializer(w), IsOk());
  g.nodes.push_back(MakeNode("id", "Identity", {"w"}, {"y"}));
  g.outputs.push_back(Value("y", ir::DType::kF32, {3}));
  EXPECT_THAT(Interpreter::Create(g, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'w' f32[3] needs 12 bytes, found 8")));
}

TEST(InterpreterTest, InputsAreChecked) {
  ir::Graph g;
  g.inputs.push_back(Value("x", ir::DType::kF32, {2}));
  g.inputs.push_back({"n", ir::DType::kF32, ir::Shape({ir::Dim::Symbolic("batch"), ir::Dim::Static(3)})});
  g.nodes.push_back(MakeNode("relu", "Relu", {"x"}, {"y"}));
  g.outputs.push_back(Value("y", ir::DType::kF32, {2}));
  auto interp = Interpreter::Create(g, {});
  ASSERT_THAT(interp, IsOk());
  EXPECT_THAT(interp->input_names(), ElementsAre("x", "n"));
  RtTensor n = F32({5, 3}, Random(15, 1));  // symbolic batch accepts 5
  EXPECT_THAT(interp->Run({{"x", F32({2}, {1, -1})}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missing input 'n'")));
  EXPECT_THAT(interp->Run({{"x", F32({3}, {1, 2, 3})}, {"n", n}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input 'x' has shape [3], expected [2]")));
  EXPECT_THAT(interp->Run({{"x", I64({2}, {1, 2})}, {"n", n}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input 'x' has dtype i64, expected f32")));
  EXPECT_THAT(interp->Run({{"x", F32({2}, {1, 2})}, {"n", n}, {"z", n}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown input 'z'")));
  auto ok = interp->Run({{"x", F32({2}, {1, -1})}, {"n", n}});
  ASSERT_THAT(ok, IsOk());
  ExpectFloats((*ok)[0], {2}, {1, 0});
}

TEST(InterpreterTest, InputWithInitializerDefaultCanBeOverridden) {
  ir::Graph g;
  ASSERT_THAT(g.AddInitializer(IrTensor<float>("k", {1}, {10})), IsOk());
  g.inputs.push_back(Value("x", ir::DType::kF32, {1}));
  g.inputs.push_back(Value("k", ir::DType::kF32, {1}));
  g.nodes.push_back(MakeNode("add", "Add", {"x", "k"}, {"y"}));
  g.outputs.push_back(Value("y", ir::DType::kF32, {1}));
  auto interp = Interpreter::Create(g, {});
  ASSERT_THAT(interp, IsOk());
  EXPECT_THAT(interp->input_names(), ElementsAre("x"));
  auto d = interp->Run({{"x", F32({1}, {1})}});
  ASSERT_THAT(d, IsOk());
  ExpectFloats((*d)[0], {1}, {11});
  auto o = interp->Run({{"x", F32({1}, {1})}, {"k", F32({1}, {5})}});
  ASSERT_THAT(o, IsOk());
  ExpectFloats((*o)[0], {1}, {6});
}

// --- End-to-end conv net --------------------------------------------------

struct NetWeights {
  std::vector<float> w1, b1, gamma, beta, mean, var, w2, fc, fc_b;
};

constexpr int64_t kC = 3, kH = 12, kW = 10, kF1 = 8, kF2 = 4, kClasses = 5;

NetWeights MakeWeights() {
  NetWeights w;
  w.w1 = Random(kF1 * kC * 9, 101, -0.5f, 0.5f);
  w.b1 = Random(kF1, 102);
  w.gamma = Random(kF1, 103, 0.5f, 1.5f);
  w.beta = Random(kF1, 104);
  w.mean = Random(kF1, 105);
  w.var = Random(kF1, 106, 0.5f, 2.0f);
  w.w2 = Random(kF2 * kF1, 107);
  w.fc = Random(kClasses * kF2, 108);
  w.fc_b = Random(kClasses, 109);
  return w;
}

// x -> Conv3x3(pad 1) -> BatchNorm -> Relu -> MaxPool2x2 -> Conv1x1 ->
// Sigmoid*self (SiLU) -> GlobalAveragePool -> Flatten -> Gemm(transB) ->
// Softmax. The first conv's weights are stored as f16 (converted at load).
ir::Graph BuildNet(const NetWeights& w, int64_t batch) {
  ir::Graph g;
  g.name = "convnet";
  g.inputs.push_back(Value("x", ir::DType::kF32, {batch, kC, kH, kW}));
  std::vector<uint16_t> w1_half;
  for (float v : w.w1) w1_half.push_back(ir::F32ToF16(v));
  ir::Tensor w1 = IrTensor<uint16_t>("w1", {kF1, kC, 3, 3}, w1_half);
  w1.dtype = ir::DType::kF16;
  EXPECT_THAT(g.AddInitializer(w1), IsOk());
  EXPECT_THAT(g.AddInitializer(IrTensor<float>("b1", {kF1}, w.b1)), IsOk());
  EXPECT_THAT(g.AddInitializer(IrTensor<float>("gamma", {kF1}, w.gamma)), IsOk());
  EXPECT_THAT(g.AddInitializer(IrTensor<float>("beta", {kF1}, w.beta)), IsOk());
  EXPECT_THAT(g.AddInitializer(IrTensor<float>("mean", {kF1}, w.mean)), IsOk());
  EXPECT_THAT(g.AddInitializer(IrTensor<float>("var", {kF1}, w.var)), IsOk());
  EXPECT_THAT(g.AddInitializer(IrTensor<float>("w2", {kF2, kF1, 1, 1}, w.w2)), IsOk());
  EXPECT_THAT(g.AddInitializer(IrTensor<float>("fc", {kClasses, kF2}, w.fc)), IsOk());
  EXPECT_THAT(g.AddInitializer(IrTensor<float>("fc_b", {kClasses}, w.fc_b)), IsOk());
  g.nodes.push_back(MakeNode("conv1", "Conv", {"x", "w1", "b1"}, {"c1"},
                             {{"pads", Attr::Ints({1, 1, 1, 1})}}));
  g.nodes.push_back(MakeNode("bn1", "BatchNormalization",
                             {"c1", "gamma", "beta", "mean", "var"}, {"n1"}));
  g.nodes.push_back(MakeNode("relu1", "Relu", {"n1"}, {"r1"}));
  g.nodes.push_back(MakeNode("pool1", "MaxPool", {"r1"}, {"p1"},
                             {{"kernel_shape", Attr::Ints({2, 2})}, {"strides", Attr::Ints({2, 2})}}));
  g.nodes.push_back(MakeNode("conv2", "Conv", {"p1", "w2"}, {"c2"}));
  g.nodes.push_back(MakeNode("sig", "Sigmoid", {"c2"}, {"s2"}));
  g.nodes.push_back(MakeNode("silu", "Mul", {"c2", "s2"}, {"m2"}));
  g.nodes.push_back(MakeNode("gap", "GlobalAveragePool", {"m2"}, {"g"}));
  g.nodes.push_back(MakeNode("flat", "Flatten", {"g"}, {"f"}));
  g.nodes.push_back(MakeNode("fc", "Gemm", {"f", "fc", "fc_b"}, {"logits"},
                             {{"transB", Attr::Int(1)}}));
  g.nodes.push_back(MakeNode("softmax", "Softmax", {"logits"}, {"probs"}));
  g.outputs.push_back(Value("probs", ir::DType::kF32, {batch, kClasses}));
  return g;
}

std::vector<float> NaiveNet(const NetWeights& w, const std::vector<float>& x, int64_t batch) {
  std::vector<float> out;
  for (int64_t n = 0; n < batch; ++n) {
    // conv1 + bn + relu, [F1, H, W]; weights rounded through f16 like the graph.
    std::vector<double> r1(kF1 * kH * kW);
    for (int64_t f = 0; f < kF1; ++f) {
      for (int64_t i = 0; i < kH; ++i) {
        for (int64_t j = 0; j < kW; ++j) {
          double acc = w.b1[f];
          for (int64_t c = 0; c < kC; ++c) {
            for (int64_t ki = 0; ki < 3; ++ki) {
              for (int64_t kj = 0; kj < 3; ++kj) {
                const int64_t ii = i + ki - 1, jj = j + kj - 1;
                if (ii < 0 || ii >= kH || jj < 0 || jj >= kW) continue;
                const float wv = ir::F16ToF32(ir::F32ToF16(w.w1[((f * kC + c) * 3 + ki) * 3 + kj]));
                acc += wv * x[((n * kC + c) * kH + ii) * kW + jj];
              }
            }
          }
          const double bn = (acc - w.mean[f]) / std::sqrt(w.var[f] + 1e-5) * w.gamma[f] + w.beta[f];
          r1[(f * kH + i) * kW + j] = std::max(0.0, bn);
        }
      }
    }
    // maxpool 2x2 -> [F1, 6, 5]; conv 1x1 -> [F2, 6, 5]; silu; mean.
    const int64_t ph = kH / 2, pw = kW / 2;
    std::vector<double> feat(kF2, 0.0);
    for (int64_t f2 = 0; f2 < kF2; ++f2) {
      for (int64_t i = 0; i < ph; ++i) {
        for (int64_t j = 0; j < pw; ++j) {
          double c2 = 0;
          for (int64_t f = 0; f < kF1; ++f) {
            double m = -1e30;
            for (int64_t a = 0; a < 2; ++a)
              for (int64_t b = 0; b < 2; ++b)
                m = std::max(m, r1[(f * kH + 2 * i + a) * kW + 2 * j + b]);
            c2 += w.w2[f2 * kF1 + f] * m;
          }
          feat[f2] += c2 / (1 + std::exp(-c2));
        }
      }
      feat[f2] /= static_cast<double>(ph * pw);
    }
    std::vector<double> logits(kClasses);
    double mx = -1e30, sum = 0;
    for (int64_t k = 0; k < kClasses; ++k) {
      logits[k] = w.fc_b[k];
      for (int64_t f = 0; f < kF2; ++f) logits[k] += w.fc[k * kF2 + f] * feat[f];
      mx = std::max(mx, logits[k]);
    }
    for (double l : logits) sum += std::exp(l - mx);
    for (double l : logits) out.push_back(static_cast<float>(std::exp(l - mx) / sum));
  }
  return out;
}

TEST(InterpreterTest, ConvNetMatchesNaiveReference) {
  const NetWeights w = MakeWeights();
  const int64_t batch = 2;
  const auto x = Random(batch * kC * kH * kW, 110);
  auto interp = Interpreter::Create(BuildNet(w, batch), {});
  ASSERT_THAT(interp, IsOk());
  auto out = interp->Run({{"x", F32({batch, kC, kH, kW}, x)}});
  ASSERT_THAT(out, IsOk());
  ExpectFloats((*out)[0], {batch, kClasses}, NaiveNet(w, x, batch), 1e-6f, 1e-5f);
}

TEST(InterpreterTest, ResultsAreBitwiseIdenticalForAnyThreadCount) {
  // Large enough that GEMMs are tiled and pools run in parallel tasks.
  const int64_t n = 2, c = 16, h = 40, wd = 40;
  ir::Graph g;
  g.inputs.push_back(Value("x", ir::DType::kF32, {n, c, h, wd}));
  ASSERT_THAT(g.AddInitializer(IrTensor<float>("w1", {64, c, 3, 3}, Random(64 * c * 9, 1))), IsOk());
  ASSERT_THAT(g.AddInitializer(IrTensor<float>("w2", {32, 64, 1, 1}, Random(32 * 64, 2))), IsOk());
  g.nodes.push_back(MakeNode("conv1", "Conv", {"x", "w1"}, {"a"}, {{"pads", Attr::Ints({1, 1, 1, 1})}}));
  g.nodes.push_back(MakeNode("conv2", "Conv", {"a", "w2"}, {"b"}));
  g.nodes.push_back(MakeNode("pool", "AveragePool", {"b"}, {"p"},
                             {{"kernel_shape", Attr::Ints({3, 3})}, {"strides", Attr::Ints({2, 2})}}));
  g.nodes.push_back(MakeNode("sm", "Softmax", {"p"}, {"y"}));
  g.outputs.push_back(Value("y", ir::DType::kF32, {}));
  g.outputs.back().shape = ir::Shape();
  const RtTensor x = F32({n, c, h, wd}, Random(n * c * h * wd, 3));
  std::vector<float> first;
  for (int threads : {1, 2, 4}) {
    InterpreterOptions opts;
    opts.num_threads = threads;
    auto interp = Interpreter::Create(g, opts);
    ASSERT_THAT(interp, IsOk());
    auto out = interp->Run({{"x", x}});
    ASSERT_THAT(out, IsOk());
    std::vector<float> v = (*out)[0].ToVector<float>();
    if (first.empty()) {
      first = v;
      continue;
    }
    ASSERT_EQ(v.size(), first.size());
    EXPECT_EQ(std::memcmp(v.data(), first.data(), v.size() * sizeof(float)), 0)
        << threads << " threads differ from 1 thread";
  }
}

TEST(InterpreterTest, ObserverSeesEveryNodeAndCanStopTheRun) {
  const NetWeights w = MakeWeights();
  auto interp = Interpreter::Create(BuildNet(w, 1), {});
  ASSERT_THAT(interp, IsOk());
  std::vector<std::string> seen;
  std::vector<std::vector<int64_t>> dims;
  interp->SetObserver([&](const ir::Node& node, const std::vector<RtTensor>& outs) {
    seen.push_back(node.name);
    dims.push_back(outs[0].dims());
    return absl::OkStatus();
  });
  const RtTensor x = F32({1, kC, kH, kW}, Random(kC * kH * kW, 5));
  RunStats stats;
  ASSERT_THAT(interp->Run({{"x", x}}, &stats), IsOk());
  EXPECT_THAT(seen, ElementsAre("conv1", "bn1", "relu1", "pool1", "conv2", "sig", "silu", "gap",
                                "flat", "fc", "softmax"));
  EXPECT_EQ(dims[3], (std::vector<int64_t>{1, kF1, kH / 2, kW / 2}));
  EXPECT_EQ(stats.nodes_run, 11);
  interp->SetObserver([](const ir::Node& node, const std::vector<RtTensor>&) {
    return node.name == "pool1" ? absl::CancelledError("enough") : absl::OkStatus();
  });
  EXPECT_THAT(interp->Run({{"x", x}}),
              StatusIs(absl::StatusCode::kCancelled,
                       HasSubstr("observer after node 'pool1' (MaxPool): enough")));
}

TEST(InterpreterTest, DeadBuffersAreReused) {
  // A chain of 8 element-wise nodes on a 1 MiB tensor needs two live
  // buffers at a time, not eight.
  ir::Graph g;
  g.inputs.push_back(Value("x", ir::DType::kF32, {256, 1024}));
  std::string prev = "x";
  for (int i = 0; i < 8; ++i) {
    const std::string out = "v" + std::to_string(i);
    g.nodes.push_back(MakeNode("n" + std::to_string(i), i % 2 ? "Neg" : "Abs", {prev}, {out}));
    prev = out;
  }
  g.outputs.push_back(Value(prev, ir::DType::kF32, {256, 1024}));
  auto interp = Interpreter::Create(g, {});
  ASSERT_THAT(interp, IsOk());
  RunStats stats;
  auto out = interp->Run({{"x", F32({256, 1024}, Random(256 * 1024, 9))}}, &stats);
  ASSERT_THAT(out, IsOk());
  const uint64_t one = 256 * 1024 * 4;
  EXPECT_EQ(stats.bytes_allocated, 2 * one);
  EXPECT_EQ(stats.bytes_reused, 6 * one);
  EXPECT_LE((*out)[0].data<float>()[0], 0.0f);  // ends with Neg(Abs(..))
}

// An elementwise node that is its input's last reader writes its result
// into that input's buffer (KernelContext::AllocateUninitializedOrReuse):
// a Relu -> HardSwish -> Relu chain allocates one buffer, not three. The
// graph input is not overwritten (the caller still holds it), and values
// read after the node, graph outputs and values an observer keeps stay as
// they were.
TEST(InterpreterTest, ElementwiseNodesWriteOverTheirInputsLastUseOnly) {
  const int64_t n = 64 * 1024;
  const std::vector<float> xv = Random(n, 21);
  auto relu = [](float v) { return v > 0.0f ? v : 0.0f; };
  auto hswish = [](float v) { return v * std::min(1.0f, std::max(0.0f, v / 6.0f + 0.5f)); };
  const RtTensor x = F32({n}, xv);
  {
    ir::Graph g;
    g.inputs.push_back(Value("x", ir::DType::kF32, {n}));
    g.nodes.push_back(MakeNode("r1", "Relu", {"x"}, {"a"}));
    g.nodes.push_back(MakeNode("hs", "HardSwish", {"a"}, {"b"}));
    g.nodes.push_back(MakeNode("r2", "Relu", {"b"}, {"c"}));
    g.outputs.push_back(Value("c", ir::DType::kF32, {n}));
    auto interp = Interpreter::Create(g, {});
    ASSERT_THAT(interp, IsOk());
    RunStats stats;
    auto out = interp->Run({{"x", x}}, &stats);
    ASSERT_THAT(out, IsOk());
    EXPECT_EQ(stats.bytes_allocated, static_cast<uint64_t>(n) * 4);
    EXPECT_EQ(stats.bytes_reused, 0u);
    const std::vector<float> c = (*out)[0].ToVector<float>();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c[i], relu(hswish(relu(xv[i])))) << i;
    EXPECT_EQ(x.ToVector<float>(), xv);  // the caller's input is untouched
    // An observer holding every output: nothing may be overwritten.
    std::vector<RtTensor> kept;
    interp->SetObserver([&](const ir::Node&, const std::vector<RtTensor>& outs) {
      kept.push_back(outs[0]);
      return absl::OkStatus();
    });
    ASSERT_THAT(interp->Run({{"x", x}}, &stats), IsOk());
    ASSERT_EQ(kept.size(), 3u);
    const std::vector<float> a = kept[0].ToVector<float>(), b = kept[1].ToVector<float>();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(a[i], relu(xv[i])) << i;
      ASSERT_EQ(b[i], hswish(relu(xv[i]))) << i;
    }
  }
  {
    // `a` is read again after HardSwish and is a graph output: HardSwish
    // must not write over it.
    ir::Graph g;
    g.inputs.push_back(Value("x", ir::DType::kF32, {n}));
    g.nodes.push_back(MakeNode("r1", "Relu", {"x"}, {"a"}));
    g.nodes.push_back(MakeNode("hs", "HardSwish", {"a"}, {"b"}));
    g.nodes.push_back(MakeNode("add", "Add", {"a", "b"}, {"y"}));
    g.nodes.push_back(MakeNode("r2", "Relu", {"x"}, {"p"}));
    g.nodes.push_back(MakeNode("hs2", "HardSwish", {"p"}, {"q"}));
    // A view sharing `v`'s buffer dies at HardSwish while `v` is read after
    // it: the buffer has two holders, so it is not written over.
    g.nodes.push_back(MakeNode("r3", "Relu", {"x"}, {"v"}));
    g.nodes.push_back(MakeNode("view", "Identity", {"v"}, {"vv"}));
    g.nodes.push_back(MakeNode("hs3", "HardSwish", {"vv"}, {"hv"}));
    g.nodes.push_back(MakeNode("add2", "Add", {"v", "hv"}, {"z"}));
    g.outputs.push_back(Value("y", ir::DType::kF32, {n}));
    g.outputs.push_back(Value("p", ir::DType::kF32, {n}));
    g.outputs.push_back(Value("q", ir::DType::kF32, {n}));
    g.outputs.push_back(Value("z", ir::DType::kF32, {n}));
    auto interp = Interpreter::Create(g, {});
    ASSERT_THAT(interp, IsOk());
    auto out = interp->Run({{"x", x}});
    ASSERT_THAT(out, IsOk());
    const std::vector<float> y = (*out)[0].ToVector<float>(), p = (*out)[1].ToVector<float>(),
                             q = (*out)[2].ToVector<float>(), z = (*out)[3].ToVector<float>();
    for (int64_t i = 0; i < n; ++i) {
      const float a = relu(xv[i]);
      ASSERT_EQ(y[i], a + hswish(a)) << i;
      ASSERT_EQ(p[i], a) << i;
      ASSERT_EQ(q[i], hswish(a)) << i;
      ASSERT_EQ(z[i], a + hswish(a)) << i;
    }
  }
}

TEST(InterpreterTest, IfRunsTheChosenBranchWithOuterScopeValues) {
  auto branch = [](const std::string& name, const std::string& op) {
    auto g = std::make_shared<ir::Graph>();
    g->name = name;
    g->nodes.push_back(MakeNode(name + "_op", op, {"a", "b"}, {name + "_out"}));
    g->outputs.push_back(Value(name + "_out", ir::DType::kF32, {2}));
    return g;
  };
  ir::Graph g;
  g.inputs.push_back(Value("c", ir::DType::kBool, {}));
  g.inputs.push_back(Value("a", ir::DType::kF32, {2}));
  g.inputs.push_back(Value("b", ir::DType::kF32, {2}));
  g.nodes.push_back(MakeNode("if", "If", {"c"}, {"y"},
                             {{"then_branch", Attr::GraphValue(branch("then", "Add"))},
                              {"else_branch", Attr::GraphValue(branch("else", "Sub"))}}));
  g.outputs.push_back(Value("y", ir::DType::kF32, {2}));
  auto interp = Interpreter::Create(g, {});
  ASSERT_THAT(interp, IsOk());
  std::vector<std::string> seen;
  interp->SetObserver([&](const ir::Node& node, const std::vector<RtTensor>&) {
    seen.push_back(node.name);
    return absl::OkStatus();
  });
  const RtTensor a = F32({2}, {5, 6}), b = F32({2}, {1, 2});
  auto t = interp->Run({{"c", RtTensor::FromVector<bool>({}, {true})}, {"a", a}, {"b", b}});
  ASSERT_THAT(t, IsOk());
  ExpectFloats((*t)[0], {2}, {6, 8});
  auto e = interp->Run({{"c", RtTensor::FromVector<bool>({}, {false})}, {"a", a}, {"b", b}});
  ASSERT_THAT(e, IsOk());
  ExpectFloats((*e)[0], {2}, {4, 4});
  EXPECT_THAT(seen, ElementsAre("then_op", "if", "else_op", "if"));
}

TEST(InterpreterTest, ABranchOutputOfAnotherDtypeThanDeclaredIsRefused) {
  // then_branch declares f32 but casts to i64 (an exporter bug ORT also
  // refuses); else_branch is honest. Only the branch taken is checked.
  auto then_g = std::make_shared<ir::Graph>();
  then_g->name = "then";
  then_g->nodes.push_back(MakeNode("to_int", "Cast", {"a"}, {"t"}, {{"to", Attr::Int(7)}}));
  then_g->outputs.push_back(Value("t", ir::DType::kF32, {2}));
  auto else_g = std::make_shared<ir::Graph>();
  else_g->name = "else";
  else_g->nodes.push_back(MakeNode("neg", "Neg", {"a"}, {"e"}));
  else_g->outputs.push_back(Value("e", ir::DType::kF32, {2}));
  ir::Graph g;
  g.inputs.push_back(Value("c", ir::DType::kBool, {}));
  g.inputs.push_back(Value("a", ir::DType::kF32, {2}));
  g.nodes.push_back(MakeNode("if", "If", {"c"}, {"y"},
                             {{"then_branch", Attr::GraphValue(then_g)},
                              {"else_branch", Attr::GraphValue(else_g)}}));
  g.outputs.push_back(Value("y", ir::DType::kF32, {2}));
  auto interp = Interpreter::Create(g, {});
  ASSERT_THAT(interp, IsOk());
  const RtTensor a = F32({2}, {1.5f, -2});
  EXPECT_THAT(interp->Run({{"c", RtTensor::FromVector<bool>({}, {true})}, {"a", a}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("node 'if' (If)"),
                             HasSubstr("subgraph 'then' output 't' is i64 but the graph "
                                       "declares f32"))));
  auto e = interp->Run({{"c", RtTensor::FromVector<bool>({}, {false})}, {"a", a}});
  ASSERT_THAT(e, IsOk());
  ExpectFloats((*e)[0], {2}, {-1.5f, 2});
}

TEST(InterpreterTest, AGraphOutputOfAnotherDtypeThanDeclaredIsRefused) {
  ir::Graph g;
  g.inputs.push_back(Value("a", ir::DType::kF32, {2}));
  g.nodes.push_back(MakeNode("to_int", "Cast", {"a"}, {"y"}, {{"to", Attr::Int(7)}}));
  g.outputs.push_back(Value("y", ir::DType::kF32, {2}));
  auto interp = Interpreter::Create(g, {});
  ASSERT_THAT(interp, IsOk());
  EXPECT_THAT(interp->Run({{"a", F32({2}, {1, 2})}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("graph output 'y' is i64 but the graph declares f32")));
}

absl::Status TripleKernel(KernelContext& ctx) {
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(RtTensor y, ctx.AllocateUninitialized(x->dtype(), x->dims()));
  for (int64_t i = 0; i < x->num_elements(); ++i) {
    y.mutable_data<float>()[i] = 3 * x->data<float>()[i];
  }
  ctx.SetOutput(0, std::move(y));
  return absl::OkStatus();
}

TEST(InterpreterTest, RegistryCanBeExtendedWithAnotherDomain) {
  KernelRegistry registry = BuiltinKernels();
  ASSERT_THAT(registry.Register("com.slimpack", "Triple", TripleKernel), IsOk());
  EXPECT_THAT(registry.Register("ai.onnx", "Relu", TripleKernel),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("Relu")));
  ir::Graph g;
  g.inputs.push_back(Value("x", ir::DType::kF32, {2}));
  ir::Node n = MakeNode("t", "Triple", {"x"}, {"y"});
  n.domain = "com.slimpack";
  g.nodes.push_back(n);
  g.outputs.push_back(Value("y", ir::DType::kF32, {2}));
  InterpreterOptions opts;
  opts.kernels = std::make_shared<const KernelRegistry>(std::move(registry));
  auto interp = Interpreter::Create(g, opts);
  ASSERT_THAT(interp, IsOk());
  auto out = interp->Run({{"x", F32({2}, {1, -2})}});
  ASSERT_THAT(out, IsOk());
  ExpectFloats((*out)[0], {2}, {3, -6});
  // Without the extension the op is unsupported.
  EXPECT_THAT(Interpreter::Create(g, {}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("com.slimpack:Triple")));
}

TEST(InterpreterTest, ModelOpsetSelectsSemantics) {
  ir::Model model;
  model.opset_imports[""] = 11;
  model.graph.inputs.push_back(Value("x", ir::DType::kF32, {1, 2, 2}));
  model.graph.nodes.push_back(MakeNode("sm", "Softmax", {"x"}, {"y"}));
  model.graph.outputs.push_back(Value("y", ir::DType::kF32, {1, 2, 2}));
  auto interp = Interpreter::Create(model, {});
  ASSERT_THAT(interp, IsOk());
  auto out = interp->Run({{"x", F32({1, 2, 2}, {0, 0, 0, 0})}});
  ASSERT_THAT(out, IsOk());
  // Opset 11 normalizes over the 4 values after axis 1, not over the last 2.
  ExpectFloats((*out)[0], {1, 2, 2}, {0.25f, 0.25f, 0.25f, 0.25f});
}

TEST(InterpreterTest, HugeTensorsAreRefused) {
  ir::Graph g;
  g.inputs.push_back(Value("s", ir::DType::kI64, {2}));
  g.nodes.push_back(MakeNode("big", "ConstantOfShape", {"s"}, {"y"}));
  g.outputs.push_back(Value("y", ir::DType::kF32, {}));
  g.outputs.back().shape = ir::Shape();
  InterpreterOptions opts;
  opts.max_tensor_bytes = 1 << 20;
  auto interp = Interpreter::Create(g, opts);
  ASSERT_THAT(interp, IsOk());
  EXPECT_THAT(interp->Run({{"s", I64({2}, {1 << 20, 1 << 20})}}),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("node 'big' (ConstantOfShape)"),
                             HasSubstr("exceeds the limit of 1048576 bytes"))));
  EXPECT_THAT(interp->Run({{"s", I64({2}, {INT64_MAX, 4})}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid output dims")));
}

// The W8A8 kernels keep their centred weights in the node's cache when the
// weight is an initializer (node_cache.h). One that a graph input can
// override is not constant: feeding another weight must give its product,
// not the cached one's.
TEST(InterpreterTest, CachedWeightsFollowAnOverridableInitializer) {
  const std::vector<int8_t> w0 = {1, -2, 3, 4, 5, -6}, w1 = {-7, 8, 9, 10, -11, 12};
  const std::vector<uint8_t> x = {3, 200};
  auto product = [&](const std::vector<int8_t>& w) {
    std::vector<int32_t> y(3);
    for (int j = 0; j < 3; ++j) y[j] = x[0] * w[j] + x[1] * w[3 + j];
    return y;
  };
  for (bool overridable : {false, true}) {
    SCOPED_TRACE(overridable ? "w is also a graph input" : "w is an initializer only");
    ir::Graph g;
    g.inputs.push_back(Value("x", ir::DType::kU8, {1, 2}));
    if (overridable) g.inputs.push_back(Value("w", ir::DType::kI8, {2, 3}));
    ASSERT_THAT(g.AddInitializer(testing::IrTensor<int8_t>("w", {2, 3}, w0)), IsOk());
    g.nodes.push_back(MakeNode("mm", "MatMulInteger", {"x", "w"}, {"y"}));
    g.outputs.push_back(Value("y", ir::DType::kI32, {1, 3}));
    auto interp = Interpreter::Create(g, {});
    ASSERT_THAT(interp, IsOk());
    const RtTensor xt = RtTensor::FromVector<uint8_t>({1, 2}, x);
    for (int run = 0; run < 2; ++run) {  // the second run reads the cache
      auto y = interp->Run({{"x", xt}});
      ASSERT_THAT(y, IsOk());
      EXPECT_THAT((*y)[0].ToVector<int32_t>(), ElementsAreArray(product(w0)));
    }
    if (overridable) {
      auto y = interp->Run({{"x", xt}, {"w", RtTensor::FromVector<int8_t>({2, 3}, w1)}});
      ASSERT_THAT(y, IsOk());
      EXPECT_THAT((*y)[0].ToVector<int32_t>(), ElementsAreArray(product(w1)));
    }
  }
}

// DequantizeLinear of a constant (a QDQ graph's weight) is computed once and
// handed out as a read-only view: later runs see the same values (through a
// reader, Neg), and an initializer a graph input can override is not
// cached: feeding another weight gives its values.
TEST(InterpreterTest, DequantizedConstantIsCachedReadOnlyAndFollowsOverrides) {
  const std::vector<int8_t> w0 = {-3, 0, 5, -128}, w1 = {7, -7, 1, 127};
  auto expected = [](const std::vector<int8_t>& w) {
    std::vector<float> y;
    for (int8_t v : w) y.push_back(-((static_cast<float>(v) - 2.0f) * 0.5f));
    return y;
  };
  for (bool overridable : {false, true}) {
    SCOPED_TRACE(overridable ? "w is also a graph input" : "w is an initializer only");
    ir::Graph g;
    if (overridable) g.inputs.push_back(Value("w", ir::DType::kI8, {4}));
    ASSERT_THAT(g.AddInitializer(testing::IrTensor<int8_t>("w", {4}, w0)), IsOk());
    ASSERT_THAT(g.AddInitializer(testing::IrTensor<float>("s", {}, {0.5f})), IsOk());
    ASSERT_THAT(g.AddInitializer(testing::IrTensor<int8_t>("z", {}, {2})), IsOk());
    g.nodes.push_back(MakeNode("dq", "DequantizeLinear", {"w", "s", "z"}, {"f"}));
    g.nodes.push_back(MakeNode("neg", "Neg", {"f"}, {"y"}));
    g.outputs.push_back(Value("y", ir::DType::kF32, {4}));
    auto interp = Interpreter::Create(g, {});
    ASSERT_THAT(interp, IsOk());
    for (int run = 0; run < 3; ++run) {  // later runs read the cache
      auto y = interp->Run({});
      ASSERT_THAT(y, IsOk());
      EXPECT_THAT((*y)[0].ToVector<float>(), ElementsAreArray(expected(w0))) << "run " << run;
    }
    if (overridable) {
      auto y = interp->Run({{"w", RtTensor::FromVector<int8_t>({4}, w1)}});
      ASSERT_THAT(y, IsOk());
      EXPECT_THAT((*y)[0].ToVector<float>(), ElementsAreArray(expected(w1)));
    }
  }
}

// Gemm and MatMul keep a constant B's packed panels (runtime/gemm.h,
// PackedB) for later runs: every run gives the bytes of a plan without
// caches (the product's definition does not depend on packing), and a B a
// graph input can override is read as fed.
TEST(InterpreterTest, ConstantWeightPanelsAreKeptAndFollowOverrides) {
  const int64_t m = 20, k = 150, n = 70;  // ragged panels, two depth blocks
  std::vector<float> x(m * k), w0(n * k), w1(n * k);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < w0.size(); ++i) {
    w0[i] = std::cos(0.11f * static_cast<float>(i));
    w1[i] = std::sin(0.23f * static_cast<float>(i)) * 0.5f;
  }
  for (const std::string op : {"Gemm", "MatMul"}) {
    for (bool overridable : {false, true}) {
      SCOPED_TRACE(op + (overridable ? ": w is also a graph input" : ": w is an initializer only"));
      const bool gemm = op == "Gemm";
      // Gemm reads W [n, k] with transB = 1; MatMul reads W [k, n].
      const std::vector<int64_t> wd = gemm ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
      ir::Graph g;
      g.inputs.push_back(Value("x", ir::DType::kF32, {m, k}));
      if (overridable) g.inputs.push_back(Value("w", ir::DType::kF32, wd));
      ASSERT_THAT(g.AddInitializer(testing::IrTensor<float>("w", wd, w0)), IsOk());
      ir::Node node = MakeNode("mm", op, {"x", "w"}, {"y"});
      if (gemm) node.attributes["transB"] = ir::Attribute::Int(1);
      g.nodes.push_back(node);
      g.outputs.push_back(Value("y", ir::DType::kF32, {m, n}));
      // The plain product, B packed on the call (no plan, no cache).
      auto reference = [&](const std::vector<float>& w) {
        std::vector<float> y(m * n);
        EXPECT_THAT(Sgemm(false, gemm, m, n, k, 1.0f, x.data(), k, w.data(), gemm ? k : n, 0.0f,
                          y.data(), n, nullptr),
                    IsOk());
        return y;
      };
      auto interp = Interpreter::Create(g, {});
      ASSERT_THAT(interp, IsOk());
      const RtTensor xt = RtTensor::FromVector<float>({m, k}, x);
      for (int run = 0; run < 3; ++run) {  // later runs read the kept panels
        auto y = interp->Run({{"x", xt}});
        ASSERT_THAT(y, IsOk());
        EXPECT_EQ((*y)[0].ToVector<float>(), reference(w0)) << "run " << run;
      }
      if (overridable) {
        auto y = interp->Run({{"x", xt}, {"w", RtTensor::FromVector<float>(wd, w1)}});
        ASSERT_THAT(y, IsOk());
        EXPECT_EQ((*y)[0].ToVector<float>(), reference(w1));
      }
    }
  }
}

// Node caches share their plan's byte budget: a value that fits is built
// once, one past the budget is built again on every call (never kept).
TEST(NodeCacheTest, KeepsValuesWithinItsBudgetAndRebuildsPastIt) {
  struct Blob {
    int64_t size;
    int64_t bytes() const { return size; }
  };
  const auto budget = std::make_shared<CacheBudget>(100);
  NodeCache first(budget), second(budget);
  int builds = 0;
  const std::function<absl::StatusOr<std::shared_ptr<const Blob>>()> build =
      [&]() -> absl::StatusOr<std::shared_ptr<const Blob>> {
    ++builds;
    return std::make_shared<const Blob>(Blob{64});
  };
  EXPECT_TRUE(first.WouldKeep(0, 64));
  EXPECT_FALSE(first.WouldKeep(0, 101));  // past the whole budget
  for (int call = 0; call < 3; ++call) ASSERT_THAT(first.GetOrBuild<Blob>(0, build), IsOk());
  EXPECT_EQ(builds, 1);  // kept: 64 of 100 bytes
  EXPECT_TRUE(first.WouldKeep(0, 64));    // held already
  EXPECT_FALSE(second.WouldKeep(0, 64));  // 36 bytes left
  for (int call = 0; call < 3; ++call) ASSERT_THAT(second.GetOrBuild<Blob>(0, build), IsOk());
  EXPECT_EQ(builds, 4);  // 36 bytes left: built on each call
  const std::function<absl::StatusOr<std::shared_ptr<const Blob>>()> fails =
      []() -> absl::StatusOr<std::shared_ptr<const Blob>> {
    return absl::InternalError("no");
  };
  EXPECT_THAT(first.GetOrBuild<Blob>(1, fails), StatusIs(absl::StatusCode::kInternal, HasSubstr("no")));
}

}  // namespace
}  // namespace slimpack::runtime
