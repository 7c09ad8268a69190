// The quantized-lookup plan rewrite (runtime/quantized_lookup.h): which
// DequantizeLinear -> elementwise op -> QuantizeLinear chains it fuses (the
// whole graph after it compared), the table it computes against an
// independent formula, and the fused interpreter's output bytes against the
// unfused one for every op it accepts, both byte types in and out, every
// code at many positions (vector bodies and tails of the kernels alike).
#include "runtime/quantized_lookup.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/interpreter.h"
#include "runtime/kernels/byte_lookup.h"
#include "runtime/kernels/fused_kernels.h"
#include "support/cpu_features.h"
#include "tests/runtime/op_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::testing::IsOk;
using ::testing::ElementsAre;

using testing::IrTensor;
using testing::MakeNode;

struct Chain {
  ir::DType in = ir::DType::kU8, out = ir::DType::kU8;
  float in_scale = 0.05f, out_scale = 0.03f;
  int in_zp = 128, out_zp = 100;
};

// x -> DequantizeLinear(s1, z1) -> `op` -> QuantizeLinear(s2, z2) -> y.
ir::Graph ChainGraph(const Chain& c, ir::Node op) {
  ir::Graph g;
  g.name = "chain";
  g.inputs.push_back({"x", c.in, {}});
  g.outputs.push_back({"y", ir::DType::kUndefined, {}});
  const auto zp = [](const std::string& name, ir::DType t, int v) {
    if (t == ir::DType::kU8) return IrTensor<uint8_t>(name, {}, {static_cast<uint8_t>(v)});
    return IrTensor<int8_t>(name, {}, {static_cast<int8_t>(v - 128)});
  };
  EXPECT_THAT(g.AddInitializer(IrTensor<float>("s1", {}, {c.in_scale})), IsOk());
  EXPECT_THAT(g.AddInitializer(zp("z1", c.in, c.in_zp)), IsOk());
  EXPECT_THAT(g.AddInitializer(IrTensor<float>("s2", {}, {c.out_scale})), IsOk());
  EXPECT_THAT(g.AddInitializer(zp("z2", c.out, c.out_zp)), IsOk());
  g.nodes.push_back(MakeNode("dq", "DequantizeLinear", {"x", "s1", "z1"}, {"f"}));
  op.inputs.insert(op.inputs.begin(), "f");
  op.outputs = {"h"};
  g.nodes.push_back(std::move(op));
  g.nodes.push_back(MakeNode("q", "QuantizeLinear", {"h", "s2", "z2"}, {"y"}));
  return g;
}

// Every code 0..255 several times in a shuffled order, 1031 bytes (not a
// multiple of any vector width).
RtTensor Codes(ir::DType t) {
  std::vector<uint8_t> v(1031);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 7);
  std::shuffle(v.begin(), v.end(), std::mt19937(5));
  if (t == ir::DType::kU8) return RtTensor::FromVector<uint8_t>({1031}, v);
  return RtTensor::FromVector<int8_t>({1031}, std::vector<int8_t>(v.begin(), v.end()));
}

std::vector<uint8_t> RunBytes(const ir::Graph& g, bool fuse, int64_t* fused) {
  InterpreterOptions o;
  o.fuse_quantized_lookups = fuse;
  auto interp = Interpreter::Create(g, o);
  EXPECT_THAT(interp, IsOk());
  if (!interp.ok()) return {};
  *fused = interp->quantized_lookups();
  auto out = interp->Run({{"x", Codes(g.inputs[0].dtype)}});
  EXPECT_THAT(out, IsOk());
  if (!out.ok()) return {};
  const RtTensor& y = (*out)[0];
  return std::vector<uint8_t>(y.raw(), y.raw() + y.num_elements());
}

ir::Node Op(std::string op, std::string domain = "") {
  return MakeNode(op, op, {}, {}, {}, std::move(domain));
}

TEST(QuantizedLookupTest, FusedRunGivesTheUnfusedBytesForEveryAcceptedOp) {
  std::vector<ir::Node> ops;
  for (const char* name : {"Relu", "HardSwish", "HardSigmoid", "Sigmoid", "Tanh", "Elu", "Selu",
                           "Softplus", "Erf", "Abs", "Neg", "Identity"}) {
    ops.push_back(Op(name));
  }
  ir::Node leaky = Op("LeakyRelu");
  leaky.attributes["alpha"] = ir::Attribute::Float(0.2f);
  ops.push_back(leaky);
  ops.push_back(Op("SiLU", kSlimpackDomain));
  ops.push_back(Op("HardSwish", kSlimpackDomain));
  for (const ir::Node& op : ops) {
    for (ir::DType in : {ir::DType::kU8, ir::DType::kI8}) {
      for (ir::DType out : {ir::DType::kU8, ir::DType::kI8}) {
        Chain c;
        c.in = in;
        c.out = out;
        const ir::Graph g = ChainGraph(c, op);
        int64_t fused = -1, plain = -1;
        const std::vector<uint8_t> want = RunBytes(g, false, &plain);
        const std::vector<uint8_t> got = RunBytes(g, true, &fused);
        const std::string what = op.domain + ":" + op.op_type + " " +
                                 std::string(ir::DTypeName(in)) + "->" +
                                 std::string(ir::DTypeName(out));
        EXPECT_EQ(plain, 0) << what;
        EXPECT_EQ(fused, 1) << what;
        EXPECT_EQ(got, want) << what;
        // Not a constant function: the table carries the op.
        EXPECT_GT(std::set<uint8_t>(want.begin(), want.end()).size(), 8u) << what;
      }
    }
  }
}

TEST(QuantizedLookupTest, ClipWithConstantBoundsFusesAndMatches) {
  ir::Node clip = Op("Clip");
  clip.inputs = {"lo", "hi"};
  ir::Graph g = ChainGraph(Chain{}, clip);
  ASSERT_THAT(g.AddInitializer(IrTensor<float>("lo", {}, {-1.0f})), IsOk());
  ASSERT_THAT(g.AddInitializer(IrTensor<float>("hi", {}, {2.5f})), IsOk());
  int64_t fused = -1, plain = -1;
  const std::vector<uint8_t> want = RunBytes(g, false, &plain);
  EXPECT_EQ(RunBytes(g, true, &fused), want);
  EXPECT_EQ(fused, 1);
}

// The graph after the rewrite, whole, and its table against the formula:
// y = saturate(round_half_even(max(0, (x - 128) * 0.05) / 0.03) + 100).
TEST(QuantizedLookupTest, RewritesTheChainIntoOneNodeAndItsTable) {
  ir::Graph g = ChainGraph(Chain{}, Op("Relu"));
  auto fused = FuseQuantizedLookups(g, std::make_shared<KernelRegistry>(BuiltinKernels()), 17);
  ASSERT_THAT(fused, IsOk());
  EXPECT_EQ(*fused, 1);
  ASSERT_EQ(g.nodes.size(), 1u);
  const ir::Node& n = g.nodes[0];
  EXPECT_EQ(n.name, "Relu");
  EXPECT_EQ(n.domain, kSlimpackDomain);
  EXPECT_EQ(n.op_type, kQuantizedLookupOp);
  EXPECT_THAT(n.inputs, ElementsAre("x", "y__lookup_table"));
  EXPECT_THAT(n.outputs, ElementsAre("y"));
  EXPECT_TRUE(n.attributes.empty());
  std::vector<std::string> names;
  for (const ir::Tensor& t : g.initializers()) names.push_back(t.name);
  EXPECT_THAT(names, ElementsAre("s1", "z1", "s2", "z2", "y__lookup_table"));
  const ir::Tensor* table = g.FindInitializer("y__lookup_table");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->dtype, ir::DType::kU8);
  EXPECT_THAT(table->dims, ElementsAre(256));
  for (int c = 0; c < 256; ++c) {
    const float f = std::max(0.0f, static_cast<float>(c - 128) * 0.05f);
    const float q = std::nearbyint(f / 0.03f) + 100.0f;
    const int want = static_cast<int>(std::min(255.0f, std::max(0.0f, q)));
    EXPECT_EQ(table->data.data()[c], want) << "code " << c;
  }
}

// Chains whose output is not a function of the input byte alone, or whose
// middle values someone else reads, stay as they are.
TEST(QuantizedLookupTest, LeavesChainsItCannotFuse) {
  const auto unchanged = [](ir::Graph g, const std::string& what) {
    const size_t nodes = g.nodes.size(), inits = g.initializers().size();
    auto fused =
        FuseQuantizedLookups(g, std::make_shared<KernelRegistry>(BuiltinKernels()), 17);
    ASSERT_THAT(fused, IsOk()) << what;
    EXPECT_EQ(*fused, 0) << what;
    EXPECT_EQ(g.nodes.size(), nodes) << what;
    EXPECT_EQ(g.initializers().size(), inits) << what;
  };
  {  // The float value in the middle is a graph output.
    ir::Graph g = ChainGraph(Chain{}, Op("Relu"));
    g.outputs.push_back({"f", ir::DType::kUndefined, {}});
    unchanged(g, "middle value is a graph output");
  }
  {  // ... or read by another node.
    ir::Graph g = ChainGraph(Chain{}, Op("Relu"));
    g.nodes.push_back(MakeNode("other", "Neg", {"h"}, {"z"}));
    g.outputs.push_back({"z", ir::DType::kUndefined, {}});
    unchanged(g, "op output has two readers");
  }
  {  // Per-channel scale: two values.
    ir::Graph g = ChainGraph(Chain{}, Op("Relu"));
    *g.FindMutableInitializer("s1") = IrTensor<float>("s1", {2}, {0.05f, 0.07f});
    unchanged(g, "per-channel scale");
  }
  {  // A scale the caller may override (an initializer that is also an input).
    ir::Graph g = ChainGraph(Chain{}, Op("Relu"));
    g.inputs.push_back({"s2", ir::DType::kF32, {}});
    unchanged(g, "overridable scale");
  }
  {  // No zero point: the input could be i32.
    ir::Graph g = ChainGraph(Chain{}, Op("Relu"));
    g.nodes[0].inputs.pop_back();
    unchanged(g, "DequantizeLinear without zero point");
  }
  {  // Clip bound from a graph input.
    ir::Node clip = Op("Clip");
    clip.inputs = {"lo"};
    ir::Graph g = ChainGraph(Chain{}, clip);
    g.inputs.push_back({"lo", ir::DType::kF32, {}});
    unchanged(g, "Clip bound not constant");
  }
  {  // Not elementwise.
    ir::Node soft = Op("Softmax");
    unchanged(ChainGraph(Chain{}, soft), "Softmax");
  }
}

// Two chains back to back (as between QLinearConvs) both fuse, and the
// second reads the first's lookup.
TEST(QuantizedLookupTest, ConsecutiveChainsFuse) {
  ir::Graph g = ChainGraph(Chain{}, Op("HardSwish"));
  g.outputs = {{"y2", ir::DType::kUndefined, {}}};
  g.nodes.push_back(MakeNode("dq2", "DequantizeLinear", {"y", "s2", "z2"}, {"f2"}));
  g.nodes.push_back(MakeNode("Sigmoid", "Sigmoid", {"f2"}, {"h2"}));
  g.nodes.push_back(MakeNode("q2", "QuantizeLinear", {"h2", "s1", "z1"}, {"y2"}));
  int64_t fused = -1, plain = -1;
  const std::vector<uint8_t> want = RunBytes(g, false, &plain);
  EXPECT_EQ(RunBytes(g, true, &fused), want);
  EXPECT_EQ(fused, 2);
}

// The lookup kernels (VPERMI2B where the CPU has VBMI, VPSHUFB and blends
// with AVX2) against the byte loop, for every code in vector bodies and in
// tails of each length.
TEST(ByteLookupTest, EveryCodeAndEveryTailLengthMatchesTheTable) {
  std::mt19937 rng(9);
  uint8_t table[256];
  for (uint8_t& v : table) v = static_cast<uint8_t>(rng());
  std::vector<uint8_t> x(256 * 3 + 63);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i < 768 ? i % 256 : rng());
  int checked = 0;
  for (int64_t n : {0, 1, 31, 32, 33, 63, 64, 65, 127, 256, 830, 831}) {
    std::vector<uint8_t> want(n + 1, 0xA5), got(n + 1, 0xA5), avx2(n + 1, 0xA5);
    kernels::LookupBytesPortable(table, x.data(), n, want.data());
    kernels::LookupBytes(table, x.data(), n, got.data());
    EXPECT_EQ(got, want) << n << " bytes";  // the guard byte past n stays 0xA5
    if (kernels::LookupBytesAvx2(table, x.data(), n, avx2.data())) {
      EXPECT_EQ(avx2, want) << n << " bytes, AVX2";
    }
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(want[i], table[x[i]]);
    ++checked;
  }
  EXPECT_EQ(checked, 12);
#if defined(__x86_64__)
  uint8_t y[1];
  EXPECT_EQ(kernels::LookupBytesVbmi(table, x.data(), 1, y),
            support::CpuAllows(support::CpuFeature::kAvx512f) &&
                support::CpuAllows(support::CpuFeature::kAvx512bw) &&
                support::CpuAllows(support::CpuFeature::kAvx512vbmi));
  EXPECT_EQ(kernels::LookupBytesAvx2(table, x.data(), 1, y),
            support::CpuAllows(support::CpuFeature::kAvx2));
#endif
}

}  // namespace
}  // namespace slimpack::runtime
