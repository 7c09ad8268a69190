// use-packed-weights and the slimpack.MatMulQ / GatherQ kernels: the rewrite
// produces the expected nodes, and a rewritten graph computes bit-identical
// outputs to the same graph run with its quantized weights dequantized at
// bind time (the interpreter's reference path), for every layout, both
// Gemm transB forms, bias, batched MatMul, products large enough to be
// tiled both ways, any thread count, and the bundled tiny LM end to end.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "eval/perplexity.h"
#include "calibration/token_ids.h"
#include "runtime/graph_plan.h"
#include "runtime/interpreter.h"
#include "ir/float_convert.h"
#include "ir/quant.h"
#include "hf/llama_graph_builder.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "formats/safetensors/safetensors_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/fused_kernels.h"
#include "quantize/quantize_weights.h"
#include "passes/use_packed_weights.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::passes {
namespace {

using ::slimpack::testing::IsOk;
using runtime::RtTensor;
using ir::DType;
using ir::QuantKind;

// A quantized layout to test: stored dtype, kind, axis, group size, and
// whether it has a zero point (asymmetric).
struct Layout {
  DType dtype;
  QuantKind kind;
  int axis;
  int64_t group;
  bool zp;
  bool f16_scale = false;
};

ir::Tensor Bytes(std::string name, DType dtype, std::vector<int64_t> dims,
                 std::vector<uint8_t> bytes) {
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

ir::Tensor F32Tensor(std::string name, std::vector<int64_t> dims, const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return Bytes(std::move(name), DType::kF32, std::move(dims), std::move(b));
}

std::vector<float> RandomFloats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Random integers of the layout's dtype, packed as the spec stores them
// (4-bit: two per byte, element 2i in the low nibble).
std::vector<uint8_t> RandomInts(DType dtype, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const bool four = dtype == DType::kI4 || dtype == DType::kU4;
  std::uniform_int_distribution<int> d(0, four ? 15 : 255);
  if (!four) {
    std::vector<uint8_t> out(n);
    for (auto& b : out) b = static_cast<uint8_t>(d(rng));
    return out;
  }
  std::vector<uint8_t> out((n + 1) / 2, 0);
  for (int64_t i = 0; i < n; ++i) out[i / 2] |= static_cast<uint8_t>(d(rng) << (4 * (i % 2)));
  return out;
}

// Adds quantized weight `name` [rows, cols] with its scale (and zero point).
void AddQuantized(ir::Graph& g, const std::string& name, int64_t rows, int64_t cols,
                  const Layout& l, uint32_t seed) {
  ir::Tensor w = Bytes(name, l.dtype, {rows, cols}, RandomInts(l.dtype, rows * cols, seed));
  w.quant.kind = l.kind;
  w.quant.axis = l.axis;
  w.quant.group_size = l.group;
  w.quant.scale = name + ".scale";
  if (l.zp) w.quant.zero_point = name + ".zp";
  const std::vector<int64_t> pdims = ir::QuantParamDims(w);
  int64_t np = 1;
  for (int64_t d : pdims) np *= d;
  ir::Tensor scale = F32Tensor(w.quant.scale, pdims, RandomFloats(np, seed + 1, 0.001f, 0.05f));
  if (l.f16_scale) {
    std::vector<uint8_t> half(static_cast<size_t>(np) * 2);
    ASSERT_THAT(ir::ConvertFloats(DType::kF32, scale.data.data(), DType::kF16, half.data(),
                                  static_cast<uint64_t>(np)),
                IsOk());
    scale = Bytes(w.quant.scale, DType::kF16, pdims, std::move(half));
  }
  ASSERT_THAT(g.AddInitializer(std::move(scale)), IsOk());
  if (l.zp) {
    ASSERT_THAT(g.AddInitializer(Bytes(w.quant.zero_point, l.dtype, pdims,
                                       RandomInts(l.dtype, np, seed + 2))),
                IsOk());
  }
  ASSERT_THAT(g.AddInitializer(std::move(w)), IsOk());
}

ir::Node MakeNode(std::string name, std::string op, std::vector<std::string> in,
                  std::vector<std::string> out) {
  ir::Node n;
  n.name = name;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.provenance = ir::Provenance::FromNode(name);
  return n;
}

ir::ValueInfo Value(std::string name, DType dtype, std::vector<int64_t> dims) {
  return {std::move(name), dtype, ir::Shape::FromDims(dims)};
}

std::vector<RtTensor> RunGraph(const ir::Graph& g, const std::map<std::string, RtTensor>& inputs,
                          int threads) {
  runtime::InterpreterOptions o;
  o.num_threads = threads;
  auto interp = runtime::Interpreter::Create(g, o);
  EXPECT_THAT(interp, IsOk());
  if (!interp.ok()) return {};
  auto out = interp->Run(inputs);
  EXPECT_THAT(out, IsOk());
  return out.ok() ? *out : std::vector<RtTensor>{};
}

void ExpectBitIdentical(const std::vector<RtTensor>& a, const std::vector<RtTensor>& b,
                        const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].dims(), b[i].dims()) << what;
    ASSERT_EQ(a[i].dtype(), DType::kF32) << what;
    EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].byte_size()), 0)
        << what << ": output " << i << " differs";
  }
}

// Sum of the bytes of every bound initializer, and of the quantized ones.
uint64_t BoundBytes(const ir::Graph& g) {
  auto plan = runtime::BuildGraphPlan(g, runtime::BuiltinKernels(), {});
  EXPECT_THAT(plan, IsOk());
  uint64_t total = 0;
  if (plan.ok()) {
    for (const auto& [slot, t] : (*plan)->constants) total += t.byte_size();
  }
  return total;
}

struct LinearCase {
  std::string op;  // "Gemm" or "MatMul"
  int trans_b;
  bool bias;
  std::vector<int64_t> a_dims;  // last dim is K
  int64_t n;
};

// One linear over a quantized weight, run dequantized and packed.
void CheckLinear(const LinearCase& c, const Layout& l, uint32_t seed) {
  const int64_t k = c.a_dims.back();
  const std::string what = c.op + " transB=" + std::to_string(c.trans_b) +
                           (c.bias ? " +bias" : "") + " dtype " +
                           std::string(ir::DTypeName(l.dtype)) + " axis " +
                           std::to_string(l.axis) + " g" + std::to_string(l.group) +
                           (l.zp ? " asym" : " sym") + (l.f16_scale ? " f16-scale" : "") +
                           " K=" + std::to_string(k) +
                           " N=" + std::to_string(c.n);
  SCOPED_TRACE(what);
  ir::Graph g;
  g.name = "linear";
  AddQuantized(g, "w", c.trans_b ? c.n : k, c.trans_b ? k : c.n, l, seed);
  std::vector<std::string> in = {"a", "w"};
  if (c.bias) {
    ASSERT_THAT(g.AddInitializer(F32Tensor("b", {c.n}, RandomFloats(c.n, seed + 7, -1, 1))),
                IsOk());
    in.push_back("b");
  }
  ir::Node n = MakeNode("lin", c.op, in, {"y"});
  if (c.op == "Gemm") n.attributes["transB"] = ir::Attribute::Int(c.trans_b);
  g.nodes.push_back(n);
  g.inputs.push_back(Value("a", DType::kF32, c.a_dims));
  g.outputs.push_back({"y", DType::kF32, ir::Shape()});
  int64_t na = 1;
  for (int64_t d : c.a_dims) na *= d;
  std::map<std::string, RtTensor> inputs = {
      {"a", RtTensor::FromVector<float>(c.a_dims, RandomFloats(na, seed + 9, -2, 2))}};

  const std::vector<RtTensor> reference = RunGraph(g, inputs, 2);
  const uint64_t dequantized_bytes = BoundBytes(g);
  ir::Graph packed = g;
  auto count = UsePackedWeights(packed);
  ASSERT_THAT(count, IsOk());
  ASSERT_EQ(*count, 1);
  ASSERT_EQ(packed.nodes[0].op_type, "MatMulQ");
  ExpectBitIdentical(reference, RunGraph(packed, inputs, 2), what + " (2 threads)");
  ExpectBitIdentical(reference, RunGraph(packed, inputs, 1), what + " (1 thread)");
  // The weight is bound packed: 4 bytes per element less 1 (8-bit) or 3.5.
  const int64_t elems = k * c.n;
  const bool four = l.dtype == DType::kI4 || l.dtype == DType::kU4;
  EXPECT_EQ(dequantized_bytes - BoundBytes(packed),
            static_cast<uint64_t>(4 * elems - (four ? (elems + 1) / 2 : elems)));
}

const Layout kI8Sym{DType::kI8, QuantKind::kInt8PerChannel, 0, 0, false};
const Layout kU8Asym{DType::kU8, QuantKind::kInt8PerChannel, 0, 0, true};
const Layout kI4G32{DType::kI4, QuantKind::kInt4GroupWise, 1, 32, false};
const Layout kU4G16{DType::kU4, QuantKind::kInt4GroupWise, 1, 16, true};
const Layout kI8G32{DType::kI8, QuantKind::kInt8GroupWise, 1, 32, false, true};
const Layout kU8G16{DType::kU8, QuantKind::kInt8GroupWise, 1, 16, true};
const Layout kI4G32F16{DType::kI4, QuantKind::kInt4GroupWise, 1, 32, false, true};
const Layout kU8AsymF16{DType::kU8, QuantKind::kInt8PerChannel, 0, 0, true, true};

// Output channels are rows of W when transB=1 and columns otherwise; the
// per-channel axis follows them, groups run along K (short last group:
// K = 40 is 32 + 8 and 2 * 16 + 8). The other axes are covered too.
Layout Along(Layout l, bool channels_are_rows) {
  const bool per_channel = l.kind == QuantKind::kInt8PerChannel;
  l.axis = (per_channel == channels_are_rows) ? 0 : 1;
  return l;
}

TEST(PackedWeightsTest, LinearsMatchTheDequantizedGraphBitForBit) {
  uint32_t seed = 1;
  for (const Layout& base :
       {kI8Sym, kU8Asym, kI4G32, kU4G16, kI8G32, kU8G16, kI4G32F16, kU8AsymF16}) {
    for (int trans_b : {0, 1}) {
      for (bool bias : {false, true}) {
        for (bool natural : {true, false}) {
          Layout l = Along(base, natural ? trans_b == 1 : trans_b == 0);
          CheckLinear({"Gemm", trans_b, bias, {5, 40}, 24}, l, seed++);
        }
      }
    }
    // Batched MatMul: A [2, 3, K] against W [K, N].
    CheckLinear({"MatMul", 0, false, {2, 3, 40}, 24}, Along(base, false), seed++);
    CheckLinear({"MatMul", 0, false, {40}, 24}, Along(base, false), seed++);
  }
}

// Products the GEMM cuts into tiles: along N (m <= n, 2 tiles of 512
// output channels) and along M (m > n, W read whole by every call).
TEST(PackedWeightsTest, TiledProductsMatchBitForBit) {
  CheckLinear({"Gemm", 1, true, {16, 512}, 1024}, Along(kU4G16, true), 101);
  CheckLinear({"Gemm", 0, false, {16, 512}, 1040}, Along(kI4G32, false), 102);
  CheckLinear({"MatMul", 0, false, {2, 8, 512}, 1024}, Along(kI8Sym, false), 103);
  CheckLinear({"Gemm", 1, false, {1024, 256}, 32}, Along(kU8Asym, true), 104);
  CheckLinear({"Gemm", 1, true, {16, 512}, 1024}, Along(kI8G32, true), 105);
  CheckLinear({"Gemm", 0, false, {1024, 256}, 32}, Along(kU8G16, false), 106);
}

TEST(PackedWeightsTest, GatherMatchesBitForBit) {
  for (const Layout& base : {kI8Sym, kU8Asym, kI4G32, kU4G16, kI8G32, kU8G16, kI4G32F16}) {
    for (int axis : {0, 1}) {
      Layout l = base;
      l.axis = axis;
      SCOPED_TRACE(std::string(ir::DTypeName(l.dtype)) + " axis " + std::to_string(axis));
      ir::Graph g;
      AddQuantized(g, "emb", 37, 40, l, 200 + axis);
      g.nodes.push_back(MakeNode("gather", "Gather", {"emb", "ids"}, {"y"}));
      g.inputs.push_back(Value("ids", DType::kI64, {2, 3}));
      g.outputs.push_back({"y", DType::kF32, ir::Shape()});
      std::map<std::string, RtTensor> inputs = {
          {"ids", RtTensor::FromVector<int64_t>({2, 3}, {0, 36, -1, 17, 17, 5})}};
      const std::vector<RtTensor> reference = RunGraph(g, inputs, 1);
      ir::Graph packed = g;
      auto count = UsePackedWeights(packed);
      ASSERT_THAT(count, IsOk());
      ASSERT_EQ(*count, 1);
      ExpectBitIdentical(reference, RunGraph(packed, inputs, 2), "GatherQ");
      EXPECT_LT(BoundBytes(packed), BoundBytes(g));
    }
  }
}

// ggml blocks: random bytes with finite f16 super-scales (d, and dmin or m
// where the type has one) at their spec offsets, so outputs are numbers.
ir::Tensor RandomBlocks(const std::string& name, ir::GgmlType type, int64_t rows, int64_t cols,
                        uint32_t seed) {
  const ir::GgmlGeometry geo = *ir::GgmlTypeGeometry(type);
  std::vector<uint8_t> bytes(*ir::GgmlRowBytes(type, cols) * rows);
  std::mt19937 rng(seed);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  std::vector<int> halves;  // byte offsets of f16 scale fields in a block
  switch (type) {
    case ir::GgmlType::kQ2_K: halves = {80, 82}; break;
    case ir::GgmlType::kQ3_K: halves = {108}; break;
    case ir::GgmlType::kQ6_K: halves = {208}; break;
    default: halves = geo.has_min ? std::vector<int>{0, 2} : std::vector<int>{0}; break;
  }
  std::uniform_real_distribution<float> scale(0.0005f, 0.02f);
  for (size_t b = 0; b < bytes.size(); b += geo.block_bytes) {
    for (int at : halves) {
      const uint16_t h = ir::F32ToF16(scale(rng));
      bytes[b + at] = static_cast<uint8_t>(h);
      bytes[b + at + 1] = static_cast<uint8_t>(h >> 8);
    }
  }
  ir::Tensor t = Bytes(name, DType::kU8, {rows, cols}, std::move(bytes));
  t.quant.kind = QuantKind::kGgmlBlocks;
  t.quant.block_type = type;
  t.quant.axis = 1;
  t.quant.group_size = geo.block_size;
  return t;
}

// MatMulQ / GatherQ over ggml blocks decode rows with the IR's reference
// decoder: bit-identical to the graph with the weight decoded at bind, for
// blocks along K (Gemm transB=1, the HF Linear) and along N (transB=0,
// batched MatMul), tiled products, any thread count; bound as its bytes.
TEST(PackedWeightsTest, GgmlBlocksMatchBitForBit) {
  uint32_t seed = 300;
  for (ir::GgmlType type : {ir::GgmlType::kQ4_0, ir::GgmlType::kQ5_1, ir::GgmlType::kQ8_0,
                            ir::GgmlType::kQ2_K, ir::GgmlType::kQ3_K, ir::GgmlType::kQ4_K,
                            ir::GgmlType::kQ5_K, ir::GgmlType::kQ6_K}) {
    struct Case {
      std::string op;
      int trans_b;
      bool bias;
      std::vector<int64_t> a_dims;
      int64_t n;
    };
    for (const Case& c : std::vector<Case>{{"Gemm", 1, true, {5, 512}, 24},
                                           {"Gemm", 0, false, {5, 40}, 256},
                                           {"MatMul", 0, false, {2, 3, 40}, 512},
                                           {"Gemm", 1, false, {16, 512}, 1024},
                                           {"Gemm", 1, false, {300, 256}, 8}}) {
      const int64_t k = c.a_dims.back();
      const std::string what = std::string(ir::GgmlTypeName(type)) + " " + c.op +
                               " transB=" + std::to_string(c.trans_b) + " K=" +
                               std::to_string(k) + " N=" + std::to_string(c.n);
      SCOPED_TRACE(what);
      ir::Graph g;
      g.name = "ggml";
      const ir::Tensor w =
          RandomBlocks("w", type, c.trans_b ? c.n : k, c.trans_b ? k : c.n, seed++);
      const uint64_t block_bytes = w.data.size();
      ASSERT_THAT(g.AddInitializer(w), IsOk());
      std::vector<std::string> in = {"a", "w"};
      if (c.bias) {
        ASSERT_THAT(g.AddInitializer(F32Tensor("b", {c.n}, RandomFloats(c.n, seed++, -1, 1))),
                    IsOk());
        in.push_back("b");
      }
      ir::Node n = MakeNode("lin", c.op, in, {"y"});
      if (c.op == "Gemm") n.attributes["transB"] = ir::Attribute::Int(c.trans_b);
      g.nodes.push_back(n);
      g.inputs.push_back(Value("a", DType::kF32, c.a_dims));
      g.outputs.push_back({"y", DType::kF32, ir::Shape()});
      int64_t na = 1;
      for (int64_t d : c.a_dims) na *= d;
      std::map<std::string, RtTensor> inputs = {
          {"a", RtTensor::FromVector<float>(c.a_dims, RandomFloats(na, seed++, -2, 2))}};
      const std::vector<RtTensor> reference = RunGraph(g, inputs, 2);
      const uint64_t dequantized_bytes = BoundBytes(g);
      ir::Graph packed = g;
      auto count = UsePackedWeights(packed);
      ASSERT_THAT(count, IsOk());
      ASSERT_EQ(*count, 1);
      ASSERT_EQ(packed.nodes[0].op_type, "MatMulQ");
      ExpectBitIdentical(reference, RunGraph(packed, inputs, 2), what + " (2 threads)");
      ExpectBitIdentical(reference, RunGraph(packed, inputs, 1), what + " (1 thread)");
      EXPECT_EQ(dequantized_bytes - BoundBytes(packed),
                static_cast<uint64_t>(4 * k * c.n) - block_bytes);
    }
    // The embedding lookup decodes only the rows it reads.
    ir::Graph g;
    ASSERT_THAT(g.AddInitializer(RandomBlocks("emb", type, 37, 256, seed++)), IsOk());
    g.nodes.push_back(MakeNode("gather", "Gather", {"emb", "ids"}, {"y"}));
    g.inputs.push_back(Value("ids", DType::kI64, {2, 3}));
    g.outputs.push_back({"y", DType::kF32, ir::Shape()});
    std::map<std::string, RtTensor> inputs = {
        {"ids", RtTensor::FromVector<int64_t>({2, 3}, {0, 36, -1, 17, 17, 5})}};
    const std::vector<RtTensor> reference = RunGraph(g, inputs, 1);
    ir::Graph packed = g;
    auto count = UsePackedWeights(packed);
    ASSERT_THAT(count, IsOk());
    ASSERT_EQ(*count, 1);
    ExpectBitIdentical(reference, RunGraph(packed, inputs, 2), "GatherQ");
    EXPECT_LT(BoundBytes(packed), BoundBytes(g));
  }
}

TEST(PackedWeightsTest, RewriteProducesTheExpectedGraph) {
  ir::Graph g;
  AddQuantized(g, "w1", 24, 40, Along(kU4G16, true), 300);   // Gemm transB=1, bias
  AddQuantized(g, "w2", 40, 24, Along(kI8Sym, false), 301);  // MatMul
  AddQuantized(g, "w3", 24, 40, Along(kI8Sym, true), 302);   // Gemm alpha=2: left alone
  AddQuantized(g, "emb", 10, 40, kU8Asym, 303);
  ASSERT_THAT(g.AddInitializer(F32Tensor("b", {24}, RandomFloats(24, 9, -1, 1))), IsOk());
  ASSERT_THAT(g.AddInitializer(F32Tensor("f", {40, 24}, RandomFloats(960, 8, -1, 1))), IsOk());
  g.nodes.push_back(MakeNode("emb_lookup", "Gather", {"emb", "ids"}, {"x"}));
  ir::Node gemm = MakeNode("q_proj", "Gemm", {"x", "w1", "b"}, {"y1"});
  gemm.attributes["transB"] = ir::Attribute::Int(1);
  g.nodes.push_back(gemm);
  g.nodes.push_back(MakeNode("mm", "MatMul", {"x", "w2"}, {"y2"}));
  ir::Node scaled = MakeNode("scaled", "Gemm", {"x", "w3"}, {"y3"});
  scaled.attributes["transB"] = ir::Attribute::Int(1);
  scaled.attributes["alpha"] = ir::Attribute::Float(2.0f);
  g.nodes.push_back(scaled);
  g.nodes.push_back(MakeNode("plain", "MatMul", {"x", "f"}, {"y4"}));
  auto count = UsePackedWeights(g);
  ASSERT_THAT(count, IsOk());
  EXPECT_EQ(*count, 3);

  const ir::Node& n0 = g.nodes[0];
  EXPECT_EQ(n0.domain, "slimpack");
  EXPECT_EQ(n0.op_type, "GatherQ");
  EXPECT_THAT(n0.inputs, ::testing::ElementsAre("emb", "emb.scale", "emb.zp", "ids"));
  EXPECT_THAT(n0.outputs, ::testing::ElementsAre("x"));
  EXPECT_EQ(n0.attributes.size(), 3u);
  EXPECT_EQ(n0.FindAttribute("kind")->s, "int8_per_channel");
  EXPECT_EQ(n0.FindAttribute("axis")->i, 0);
  EXPECT_EQ(n0.FindAttribute("group_size")->i, 0);
  EXPECT_EQ(n0.provenance, ir::Provenance::FromNode("emb_lookup"));

  const ir::Node& n1 = g.nodes[1];
  EXPECT_EQ(n1.name, "q_proj");
  EXPECT_EQ(n1.domain, "slimpack");
  EXPECT_EQ(n1.op_type, "MatMulQ");
  EXPECT_THAT(n1.inputs, ::testing::ElementsAre("x", "w1", "w1.scale", "w1.zp", "b"));
  EXPECT_EQ(n1.attributes.size(), 4u);
  EXPECT_EQ(n1.FindAttribute("kind")->s, "int4_groupwise");
  EXPECT_EQ(n1.FindAttribute("axis")->i, 1);
  EXPECT_EQ(n1.FindAttribute("group_size")->i, 16);
  EXPECT_EQ(n1.FindAttribute("trans_b")->i, 1);
  EXPECT_EQ(n1.provenance, ir::Provenance::FromNode("q_proj"));

  const ir::Node& n2 = g.nodes[2];
  EXPECT_EQ(n2.op_type, "MatMulQ");
  EXPECT_THAT(n2.inputs, ::testing::ElementsAre("x", "w2", "w2.scale"));  // no zp, no bias
  EXPECT_EQ(n2.FindAttribute("trans_b")->i, 0);
  EXPECT_EQ(n2.FindAttribute("axis")->i, 1);
  EXPECT_EQ(n2.provenance, ir::Provenance::FromNode("mm"));

  EXPECT_EQ(g.nodes[3].op_type, "Gemm");  // alpha != 1
  EXPECT_EQ(g.nodes[3].domain, "");
  EXPECT_EQ(g.nodes[4].op_type, "MatMul");  // f32 weight
  EXPECT_EQ(g.nodes[4].domain, "");
  // Idempotent: nothing left to rewrite.
  EXPECT_EQ(*UsePackedWeights(g), 0);
}

// A weight another (plain) op also reads is bound dequantized; MatMulQ
// then runs on the f32 values, still bit-identical.
TEST(PackedWeightsTest, SharedWeightFallsBackToDequantized) {
  ir::Graph g;
  AddQuantized(g, "w", 24, 40, Along(kI4G32, true), 400);
  ir::Node gemm = MakeNode("lin", "Gemm", {"a", "w"}, {"y"});
  gemm.attributes["transB"] = ir::Attribute::Int(1);
  g.nodes.push_back(gemm);
  g.nodes.push_back(MakeNode("id", "Identity", {"w"}, {"wcopy"}));
  g.inputs.push_back(Value("a", DType::kF32, {3, 40}));
  g.outputs.push_back({"y", DType::kF32, ir::Shape()});
  g.outputs.push_back({"wcopy", DType::kF32, ir::Shape()});
  std::map<std::string, RtTensor> inputs = {
      {"a", RtTensor::FromVector<float>({3, 40}, RandomFloats(120, 5, -1, 1))}};
  const auto reference = RunGraph(g, inputs, 1);
  ir::Graph packed = g;
  ASSERT_EQ(*UsePackedWeights(packed), 1);
  ExpectBitIdentical(reference, RunGraph(packed, inputs, 2), "shared weight");
  EXPECT_EQ(BoundBytes(packed), BoundBytes(g));
}

// The bundled LM quantized int4-g128 RTN: perplexity over 16 windows is
// identical with packed weights, and the bound weights shrink to the packed
// bytes (f32 weights are no longer materialised).
TEST(PackedWeightsTest, TinyLlamaPerplexityIsIdenticalAndWeightsStayPacked) {
  const std::string dir = SLIMPACK_TINY_LLAMA_DIR;
  auto ckpt = safetensors::ImportSafetensors(dir);
  ASSERT_THAT(ckpt, IsOk());
  quantize::QuantizeRequest req;
  req.config.scheme = *quantize::ParseWeightScheme("int4-g128");
  req.config.algorithm = quantize::Algorithm::kRtn;
  req.calib_paths = {dir + "/calib_tokens.npy"};
  req.threads = 2;
  ASSERT_THAT(quantize::QuantizeWeights(*ckpt, req), IsOk());
  auto model = hf::BuildDecoderGraph(*ckpt);
  ASSERT_THAT(model, IsOk());

  auto eval = safetensors::ReadSafetensorsFile(dir + "/eval.safetensors");
  ASSERT_THAT(eval, IsOk());
  std::vector<int64_t> tokens;
  for (const ir::Tensor& t : eval->tensors) {
    if (t.name != "input_ids") continue;
    auto ids = calibration::TokenIdsFromTensor(t, "eval.safetensors:input_ids");
    ASSERT_THAT(ids, IsOk());
    tokens = *ids;
  }
  constexpr int64_t kWindow = 64;
  ASSERT_GE(tokens.size(), static_cast<size_t>(16 * kWindow));
  tokens.resize(16 * kWindow);

  auto perplexity = [&](const ir::Model& m, int threads) {
    runtime::InterpreterOptions io;
    io.num_threads = threads;
    auto interp = runtime::Interpreter::Create(m, io);
    EXPECT_THAT(interp, IsOk());
    eval::PerplexityOptions po;
    po.window = kWindow;
    po.windows_per_batch = 8;
    auto r = eval::ComputePerplexity(*interp, tokens, po);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? r->mean_nll : -1.0;
  };
  const double reference = perplexity(*model, 2);
  ir::Model packed = *model;
  auto count = UsePackedWeights(packed.graph);
  ASSERT_THAT(count, IsOk());
  // 7 linears per layer (4 layers), lm_head, and the embedding lookup.
  EXPECT_EQ(*count, 4 * 7 + 2);
  EXPECT_EQ(perplexity(packed, 2), reference);
  EXPECT_EQ(perplexity(packed, 1), reference);

  const uint64_t before = BoundBytes(model->graph);
  const uint64_t after = BoundBytes(packed.graph);
  std::printf("[ packed   ] tiny-llama int4-g128: bound initializers %llu -> %llu bytes\n",
              static_cast<unsigned long long>(before), static_cast<unsigned long long>(after));
  // Every quantized weight now costs half a byte per element instead of 4.
  uint64_t quant_elems = 0, quant_bytes = 0;
  for (const ir::Tensor& t : packed.graph.initializers()) {
    if (!t.quant.quantized()) continue;
    quant_elems += *t.NumElements();
    quant_bytes += t.data.size();
  }
  ASSERT_GT(quant_elems, 0u);
  EXPECT_EQ(before - after, 4 * quant_elems - quant_bytes);
}

}  // namespace
}  // namespace slimpack::passes
