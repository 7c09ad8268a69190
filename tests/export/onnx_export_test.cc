// Tests for the ONNX export rewrites: every slimpack op lowers to nodes the
// interpreter runs to the same values (differential, fixed-seed inputs);
// the ort profile's contrib ops; QuantizeStatic's QOperator graph (u8 and
// i8 activations) rewritten as QDQ, within one output step of it and
// carrying its scales exactly; weight-only int8 as DequantizeLinear (same
// values) and int4 as MatMulNBits (same codes); refusals naming the node or
// tensor; idempotence. ONNX Runtime itself runs the exports in onnx_ort_test.sh.
#include <algorithm>
#include <cstring>
#include <tuple>

#include "export/onnx_export.h"
#include "export/onnx_lower.h"
#include "export/onnx_opset21.h"
#include "export/onnx_qdq.h"
#include "export/onnx_weights.h"
#include "ir/quant.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass_manager.h"
#include "passes/registry.h"
#include "quantize/quantize_static.h"
#include "tests/passes/pass_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_export {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace ::slimpack::passes::testing;

std::string Header(int opset) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) +
         ", \"slimpack\" : 1]>\n";
}

std::vector<std::string> Ops(const ir::Graph& g) {
  std::vector<std::string> ops;
  for (const ir::Node& n : g.nodes) ops.push_back((n.domain.empty() ? "" : n.domain + ".") + n.op_type);
  return ops;
}

// Lowers `model` (standard profile) and checks the interpreter computes
// the same outputs before and after, to float rounding.
void ExpectLoweringMatches(ir::Model model, int opset, double tol = 2e-6) {
  auto inputs = RandomInputs(model.graph, 7);
  const auto before = Evaluate(model.graph, inputs, opset);
  auto report = LowerSlimpackOps(model, OnnxProfile::kStandard);
  ASSERT_THAT(report.status(), IsOk());
  for (const ir::Node& n : model.graph.nodes) EXPECT_EQ(n.domain, "") << n.op_type;
  EXPECT_LE(MaxAbsDiff(before, Evaluate(model.graph, inputs, opset)), tol);
}

std::string Floats(size_t n, uint32_t seed) { return FloatList(RandomFloats(n, seed, -1, 1)); }

TEST(OnnxLowerTest, FusedConvWithHardSwishBelowOpset14) {
  ir::Model m = ImportText(Header(13) + R"(
g (float[1,2,5,5] x) => (float[1,3,3,3] y) {
  W = Constant <value = float[3,2,3,3] {)" + Floats(54, 1) + R"(}> ()
  B = Constant <value = float[3] {0.5, -1, 0.25}> ()
  y = slimpack.FusedConv <activation = "HardSwish", kernel_shape = [3, 3]> (x, W, B)
}
)");
  ExpectLoweringMatches(m, 13);
  ASSERT_THAT(LowerSlimpackOps(m, OnnxProfile::kStandard).status(), IsOk());
  EXPECT_THAT(Ops(m.graph), ElementsAre("Conv", "HardSigmoid", "Mul"));
  EXPECT_EQ(m.graph.nodes[0].name, "y");  // the fused node's name stays on the Conv
}

TEST(OnnxLowerTest, FusedGemmClipTakesBoundsAsInputsFromOpset11) {
  ir::Model m = ImportText(Header(13) + R"(
g (float[2,4] x) => (float[2,3] y) {
  W = Constant <value = float[3,4] {)" + Floats(12, 2) + R"(}> ()
  y = slimpack.FusedGemm <transB = 1, activation = "Clip", activation_params = [-0.5, 0.5]> (x, W)
}
)");
  ExpectLoweringMatches(m, 13);
  ASSERT_THAT(LowerSlimpackOps(m, OnnxProfile::kStandard).status(), IsOk());
  ASSERT_THAT(Ops(m.graph), ElementsAre("Gemm", "Clip"));
  EXPECT_EQ(m.graph.nodes[1].inputs.size(), 3u);
}

TEST(OnnxLowerTest, NormsGeluSiluAttentionMatMulAddMatchTheInterpreter) {
  ExpectLoweringMatches(ImportText(Header(17) + R"(
g (float[2,3,8] x) => (float[2,3,8] y) {
  s = Constant <value = float[8] {)" + Floats(8, 3) + R"(}> ()
  y = slimpack.RMSNorm <axis = -1, epsilon = 0.00001> (x, s)
}
)"), 17);
  // A non-negative axis (needs the rank), at opset 18 where ReduceMean
  // takes its axes as an input (the importer reads up to 17: raised after).
  ir::Model at18 = ImportText(Header(17) + R"(
g (float[2,3,8] x) => (float[2,3,8] y) {
  s = Constant <value = float[8] {)" + Floats(8, 4) + R"(}> ()
  y = slimpack.RMSNorm <axis = 2, epsilon = 0.001> (x, s)
}
)");
  at18.opset_imports[""] = 18;
  ExpectLoweringMatches(at18, 18);
  for (const char* approx : {"none", "tanh"}) {
    ExpectLoweringMatches(ImportText(Header(14) + R"(
g (float[4,6] x) => (float[4,6] y) {
  y = slimpack.Gelu <approximate = ")" + std::string(approx) + R"("> (x)
}
)"), 14);
    ExpectLoweringMatches(ImportText(Header(17) + R"(
g (float[4,6] x) => (float[4,6] y) {
  s = Constant <value = float[6] {)" + Floats(6, 5) + R"(}> ()
  b = Constant <value = float[6] {)" + Floats(6, 6) + R"(}> ()
  y = slimpack.LayerNormGelu <axis = -1, epsilon = 0.00001, approximate = ")" +
                                         std::string(approx) + R"("> (x, s, b)
}
)"), 17);
  }
  ExpectLoweringMatches(ImportText(Header(17) + R"(
g (float[4,6] x) => (float[4,6] y) {
  y = slimpack.SiLU (x)
}
)"), 17);
  ExpectLoweringMatches(ImportText(Header(17) + R"(
g (float[2,4,8] q, float[2,8,4] kt, float[2,4,8] v, float[4,4] mask) => (float[2,4,8] y) {
  y = slimpack.Attention <scale_divisor = 2.8284271> (q, kt, v, mask)
}
)"), 17);
  ExpectLoweringMatches(ImportText(Header(17) + R"(
g (float[2,3,4] x) => (float[2,3,5] y) {
  W = Constant <value = float[4,5] {)" + Floats(20, 8) + R"(}> ()
  b = Constant <value = float[5] {)" + Floats(5, 9) + R"(}> ()
  y = slimpack.MatMulAdd (x, W, b)
}
)"), 17);
}

TEST(OnnxLowerTest, OrtProfileUsesContribKernels) {
  ir::Model m = ImportText(Header(17) + R"(
g (float[1,2,5,5] x, float[2,3,8] h) => (float[1,3,3,3] y, float[2,3,8] r, float[2,3,8] z) {
  W = Constant <value = float[3,2,3,3] {)" + Floats(54, 1) + R"(}> ()
  s = Constant <value = float[8] {)" + Floats(8, 3) + R"(}> ()
  y = slimpack.FusedConv <activation = "LeakyRelu", activation_params = [0.1], kernel_shape = [3, 3]> (x, W)
  r = slimpack.RMSNorm <axis = -1, epsilon = 0.00001> (h, s)
  z = slimpack.Gelu <approximate = "tanh"> (r)
}
)");
  auto report = LowerSlimpackOps(m, OnnxProfile::kOrt);
  ASSERT_THAT(report.status(), IsOk());
  EXPECT_THAT(Ops(m.graph), ElementsAre("com.microsoft.FusedConv", "SimplifiedLayerNormalization",
                                        "com.microsoft.FastGelu"));
  EXPECT_EQ(m.graph.nodes[0].FindAttribute("activation")->s, "LeakyRelu");
  EXPECT_EQ(m.opset_imports.at("com.microsoft"), 1);
}

TEST(OnnxLowerTest, RefusesAnOpWithoutLoweringNamingIt) {
  ir::Model m = ImportText(Header(17) + R"(
g (float[4,6] x) => (float[4,6] y) {
  y = slimpack.Mystery (x)
}
)");
  const auto before = Ops(m.graph);
  EXPECT_THAT(LowerSlimpackOps(m, OnnxProfile::kStandard).status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("node 'y' (slimpack.Mystery) has no ONNX lowering")));
  EXPECT_EQ(Ops(m.graph), before);  // unchanged on error
}

// x -> Conv -> Relu -> Flatten -> Gemm, fused and statically quantized.
ir::Model QOperatorModel(ir::DType act, int opset = 17) {
  ir::Model m = ImportText("<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\n" +
                           "g (float[2,2,3,3] x) => (float[2,4] y) {\n"
                           "  W = Constant <value = float[3,2,2,2] {" + Floats(24, 11) + "}> ()\n"
                           "  B = Constant <value = float[3] {0.25, -0.5, 0.125}> ()\n"
                           "  G = Constant <value = float[4,12] {" + Floats(48, 12) + "}> ()\n"
                           "  GB = Constant <value = float[4] {0.5, -0.25, 0, 1}> ()\n"
                           "  c = Conv (x, W, B)\n"
                           "  r = Relu (c)\n"
                           "  f = Flatten (r)\n"
                           "  y = Gemm <transB = 1> (f, G, GB)\n"
                           "}\n");
  {
    passes::PassManagerOptions po;
    po.opset = opset;
    passes::PassManager manager(po);
    EXPECT_THAT(manager.AddPasses(passes::DefaultPipeline(ir::SourceFormat::kOnnx)), IsOk());
    EXPECT_THAT(manager.Run(m.graph), IsOk());
  }
  calibration::CalibrationTable table;
  for (const auto& [name, lo, hi] : {std::tuple<const char*, double, double>{"x", -2, 2.25},
                                     {"c", -3, 6}, {"r", 0, 6}, {"f", 0, 6}}) {
    calibration::TensorCalibration t;
    t.range.elements = 100;
    t.range.min = t.range.lo = lo;
    t.range.max = t.range.hi = hi;
    table.tensors[name] = t;
  }
  passes::StaticQuantOptions options;
  options.activation_dtype = act;
  auto report = passes::QuantizeStatic(m, table, options);
  EXPECT_THAT(report.status(), IsOk());
  return m;
}

TEST(OnnxQdqTest, QOperatorGraphBecomesQdqWithinOneOutputStep) {
  for (ir::DType act : {ir::DType::kU8, ir::DType::kI8}) {
    ir::Model m = QOperatorModel(act);
    ASSERT_THAT(Ops(m.graph), ElementsAre("QuantizeLinear", "QLinearConv", "DequantizeLinear",
                                          "Flatten", "QuantizeLinear", "MatMulInteger", "Add",
                                          "Cast", "Mul"))
        << "QuantizeStatic's form changed; update the QDQ rewrite";
    auto inputs = RandomInputs(m.graph, 3);
    const auto qop = Evaluate(m.graph, inputs);
    const ir::Node qconv = m.graph.nodes[1];
    auto report = ConvertToQdq(m);
    ASSERT_THAT(report.status(), IsOk());
    EXPECT_EQ(report->convs, 1);
    EXPECT_EQ(report->matmuls, 1);
    EXPECT_THAT(Ops(m.graph),
                ElementsAre("QuantizeLinear", "DequantizeLinear", "DequantizeLinear",
                            "DequantizeLinear", "Conv", "QuantizeLinear", "DequantizeLinear",
                            "Flatten", "QuantizeLinear", "DequantizeLinear", "DequantizeLinear",
                            "MatMul", "DequantizeLinear", "Add"));
    // The bias scale is the product its int32 codes were computed with.
    const std::vector<float> sx = FloatsOf(*m.graph.FindInitializer(qconv.inputs[1]));
    const std::vector<float> sw = FloatsOf(*m.graph.FindInitializer(qconv.inputs[4]));
    const ir::Node& bias_dq = m.graph.nodes[1];
    ASSERT_EQ(bias_dq.inputs[0], qconv.inputs[8]);
    const std::vector<float> sb = FloatsOf(*m.graph.FindInitializer(bias_dq.inputs[1]));
    ASSERT_EQ(sb.size(), 3u);
    for (size_t i = 0; i < sb.size(); ++i) EXPECT_EQ(sb[i], sx[0] * sw[i]);
    EXPECT_EQ(bias_dq.FindAttribute("axis")->i, 0);
    // Outputs: within one step of the output's range (as a u8 grid).
    const auto qdq = Evaluate(m.graph, inputs);
    float lo = 0, hi = 0;
    for (float v : qop[0]) lo = std::min(lo, v), hi = std::max(hi, v);
    EXPECT_LE(MaxAbsDiff(qop, qdq), (hi - lo) / 255.0) << ir::DTypeName(act);
    // Idempotent: nothing integer is left to rewrite.
    const auto ops = Ops(m.graph);
    auto again = ConvertToQdq(m);
    ASSERT_THAT(again.status(), IsOk());
    EXPECT_EQ(again->convs + again->matmuls, 0);
    EXPECT_EQ(Ops(m.graph), ops);
  }
}

TEST(OnnxQdqTest, RefusesPerAxisBelowOpset13) {
  ir::Model m = QOperatorModel(ir::DType::kU8, 12);
  EXPECT_THAT(ConvertToQdq(m).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("needs default-domain opset >= 13; the model is opset 12")));
  OnnxExportOptions qop;
  qop.quant_format = QuantFormat::kQOperator;
  EXPECT_THAT(PrepareForOnnxRuntime(m, qop).status(), IsOk());
}

TEST(OnnxQdqTest, RefusesAMatMulIntegerOutsideQuantizeStaticsForm) {
  ir::Model m = QOperatorModel(ir::DType::kU8);
  // A second reader of the accumulator.
  m.graph.outputs.push_back({m.graph.nodes[5].outputs[0], ir::DType::kI32, {}});
  EXPECT_THAT(ConvertToQdq(m).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("(MatMulInteger): cannot write as QDQ")));
}

// A constant weight tensor of `dtype` with raw bytes.
ir::Tensor Raw(const std::string& name, ir::DType dtype, std::vector<int64_t> dims,
               std::vector<uint8_t> bytes) {
  ir::Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

ir::Tensor F32(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return Raw(name, ir::DType::kF32, std::move(dims), std::move(b));
}

// y = Gemm(x, W, transB=1) with W [3, 32] quantized as `kind`.
ir::Model QuantizedGemm(ir::QuantKind kind, ir::DType dtype, bool zero_point) {
  ir::Model m = ImportText(Header(17) + R"(
g (float[2,32] x) => (float[2,3] y) {
  W = Constant <value = float[3,32] {)" + Floats(96, 2) + R"(}> ()
  y = Gemm <transB = 1> (x, W)
}
)");
  m.graph.RemoveInitializer("W");
  std::vector<uint8_t> codes(kind == ir::QuantKind::kInt4GroupWise ? 48 : 96);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i * 37 + 11);
  ir::Tensor w = Raw("W", dtype, {3, 32}, codes);
  w.quant.kind = kind;
  w.quant.scale = "W.scale";
  const bool int4 = kind == ir::QuantKind::kInt4GroupWise;
  w.quant.axis = int4 ? 1 : 0;
  w.quant.group_size = int4 ? 16 : 0;
  const std::vector<int64_t> sd = int4 ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{3};
  EXPECT_THAT(m.graph.AddInitializer(F32("W.scale", sd, RandomFloats(int4 ? 6 : 3, 4, 0.01f, 0.1f))), IsOk());
  if (zero_point) {
    w.quant.zero_point = "W.zero_point";
    EXPECT_THAT(m.graph.AddInitializer(Raw("W.zero_point", dtype, sd,
                                           int4 ? std::vector<uint8_t>{0x35, 0x9, 0x7f}
                                                : std::vector<uint8_t>{3, 250, 128})),
                IsOk());
  }
  EXPECT_THAT(m.graph.AddInitializer(std::move(w)), IsOk());
  return m;
}

TEST(OnnxWeightsTest, Int8PerChannelBecomesDequantizeLinearOnTheWeight) {
  for (bool zp : {false, true}) {
    ir::Model m = QuantizedGemm(ir::QuantKind::kInt8PerChannel, zp ? ir::DType::kU8 : ir::DType::kI8, zp);
    auto inputs = RandomInputs(m.graph, 5);
    const auto before = Evaluate(m.graph, inputs);  // the interpreter dequantizes at binding
    auto report = ExportQuantizedWeights(m, OnnxProfile::kStandard);
    ASSERT_THAT(report.status(), IsOk());
    EXPECT_EQ(report->dequantize_weights, 1);
    ASSERT_THAT(Ops(m.graph), ElementsAre("DequantizeLinear", "Gemm"));
    EXPECT_EQ(m.graph.nodes[0].outputs[0], "W");
    EXPECT_EQ(m.graph.nodes[0].FindAttribute("axis")->i, 0);
    EXPECT_EQ(m.graph.nodes[0].inputs.size(), zp ? 3u : 2u);
    for (const ir::Tensor& t : m.graph.initializers()) EXPECT_FALSE(t.quant.quantized()) << t.name;
    EXPECT_EQ(MaxAbsDiff(before, Evaluate(m.graph, inputs)), 0.0);
  }
}

TEST(OnnxWeightsTest, Int4GroupWiseBecomesMatMulNBitsWithTheSameCodes) {
  for (bool asym : {false, true}) {
    ir::Model m = QuantizedGemm(ir::QuantKind::kInt4GroupWise, asym ? ir::DType::kU4 : ir::DType::kI4, asym);
    const ir::Tensor w = *m.graph.FindInitializer("W");
    auto report = ExportQuantizedWeights(m, OnnxProfile::kOrt);
    ASSERT_THAT(report.status(), IsOk());
    ASSERT_THAT(Ops(m.graph), ElementsAre("com.microsoft.MatMulNBits"));
    const ir::Node& mm = m.graph.nodes[0];
    EXPECT_EQ(mm.FindAttribute("K")->i, 32);
    EXPECT_EQ(mm.FindAttribute("N")->i, 3);
    EXPECT_EQ(mm.FindAttribute("block_size")->i, 16);
    EXPECT_EQ(mm.inputs.size(), asym ? 4u : 3u);
    // [N, K] row-major codes are already MatMulNBits' order: nibbles equal
    // the codes (+8 for signed codes, whose default zero point is 8).
    const ir::Tensor* b = m.graph.FindInitializer(mm.inputs[1]);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->dims, (std::vector<int64_t>{3, 2, 8}));
    for (uint64_t i = 0; i < 96; ++i) {
      const int32_t code = asym ? ir::IntAt<ir::DType::kU4>(w.data.data(), i)
                                : ir::IntAt<ir::DType::kI4>(w.data.data(), i);
      EXPECT_EQ(ir::IntAt<ir::DType::kU4>(b->data.data(), i), code + (asym ? 0 : 8)) << i;
    }
    if (asym) {  // 2 blocks per row: one byte per row, block 0 in the low nibble
      const ir::Tensor* z = m.graph.FindInitializer(mm.inputs[3]);
      ASSERT_NE(z, nullptr);
      EXPECT_THAT(std::vector<uint8_t>(z->data.data(), z->data.data() + z->data.size()),
                  ElementsAre(0x35, 0x09, 0x7f));
    }
    EXPECT_EQ(m.opset_imports.at("com.microsoft"), 1);
  }
}

// An act-order weight (rows stored permuted, read through
// Gather(x, W.input_perm, axis=-1)) becomes one MatMulNBits on x with the
// codes back in checkpoint order and the checkpoint's g_idx; zero points
// f32, the Gather gone. ORT runs the GPTQ act-order fixture so in
// onnx_ort_float.
TEST(OnnxWeightsTest, ActOrderGatherFoldsIntoMatMulNBitsGIdx) {
  ir::Model m = QuantizedGemm(ir::QuantKind::kInt4GroupWise, ir::DType::kU4, true);
  std::vector<int64_t> perm(32);
  for (int64_t j = 0; j < 32; ++j) perm[j] = (j * 7 + 3) % 32;  // 7 is a unit mod 32
  std::vector<uint8_t> pb(32 * 8);
  std::memcpy(pb.data(), perm.data(), pb.size());
  ASSERT_THAT(m.graph.AddInitializer(Raw("W.input_perm", ir::DType::kI64, {32}, pb)), IsOk());
  ir::Node gather;
  gather.name = "perm_x";
  gather.op_type = "Gather";
  gather.inputs = {"x", "W.input_perm"};
  gather.outputs = {"x_perm"};
  gather.attributes["axis"] = ir::Attribute::Int(-1);
  m.graph.nodes[0].inputs[0] = "x_perm";
  m.graph.nodes.insert(m.graph.nodes.begin(), gather);
  const ir::Tensor w = *m.graph.FindInitializer("W");
  auto report = ExportQuantizedWeights(m, OnnxProfile::kOrt);
  ASSERT_THAT(report.status(), IsOk());
  EXPECT_EQ(report->g_idx_folded, 1);
  ASSERT_THAT(Ops(m.graph), ElementsAre("com.microsoft.MatMulNBits"));
  const ir::Node& mm = m.graph.nodes[0];
  ASSERT_EQ(mm.inputs.size(), 5u);
  EXPECT_EQ(mm.inputs[0], "x");
  EXPECT_EQ(m.graph.FindInitializer("W.input_perm"), nullptr);
  const ir::Tensor* b = m.graph.FindInitializer(mm.inputs[1]);
  const ir::Tensor* zp = m.graph.FindInitializer(mm.inputs[3]);
  const ir::Tensor* g_idx = m.graph.FindInitializer(mm.inputs[4]);
  ASSERT_TRUE(b != nullptr && zp != nullptr && g_idx != nullptr);
  EXPECT_EQ(zp->dtype, ir::DType::kF32);
  EXPECT_EQ(zp->dims, std::vector<int64_t>{6});
  ASSERT_EQ(g_idx->dtype, ir::DType::kI32);
  std::vector<int32_t> gi(32);
  std::memcpy(gi.data(), g_idx->data.data(), 32 * 4);
  for (int64_t n = 0; n < 3; ++n) {
    for (int64_t j = 0; j < 32; ++j) {
      // Stored position j holds checkpoint row perm[j], of group j / 16.
      EXPECT_EQ(ir::IntAt<ir::DType::kU4>(b->data.data(), n * 32 + perm[j]),
                ir::IntAt<ir::DType::kU4>(w.data.data(), n * 32 + j));
      if (n == 0) {
        EXPECT_EQ(gi[perm[j]], j / 16) << j;
      }
    }
  }
}

// Without the ort profile, or where MatMulNBits cannot take the weight
// (here: a Gemm without transB reads groups along N), a group-wise weight
// is standard ONNX: DequantizeLinear of the codes as stored (the IR's
// 4-bit packing is ONNX's), f32 scales, the zero point as it is, axis and
// block_size from the layout, writing W; the model is raised to opset 21.
// ORT runs these against `slimpack run` in onnx_ort_float.
TEST(OnnxWeightsTest, Int4GroupWiseElseBecomesBlockedDequantizeLinear) {
  for (bool asym : {false, true}) {
    for (bool untransposed : {false, true}) {
      ir::Model m = QuantizedGemm(ir::QuantKind::kInt4GroupWise,
                                  asym ? ir::DType::kU4 : ir::DType::kI4, asym);
      if (untransposed) m.graph.nodes[0].attributes.erase("transB");
      const ir::Tensor w = *m.graph.FindInitializer("W");
      auto report = ExportQuantizedWeights(m, untransposed ? OnnxProfile::kOrt
                                                           : OnnxProfile::kStandard);
      ASSERT_THAT(report.status(), IsOk());
      EXPECT_EQ(report->blocked_dequantize, 1);
      EXPECT_EQ(report->matmul_nbits, 0);
      EXPECT_EQ(report->opset_raised_from, 17);
      EXPECT_EQ(m.opset_imports.at(""), 21);
      ASSERT_THAT(Ops(m.graph), ElementsAre("DequantizeLinear", "Gemm"));
      const ir::Node& dq = m.graph.nodes[0];
      EXPECT_EQ(dq.outputs[0], "W");
      EXPECT_EQ(dq.FindAttribute("axis")->i, w.quant.axis);
      EXPECT_EQ(dq.FindAttribute("block_size")->i, w.quant.group_size);
      ASSERT_EQ(dq.inputs.size(), asym ? 3u : 2u);
      const ir::Tensor* codes = m.graph.FindInitializer(dq.inputs[0]);
      ASSERT_NE(codes, nullptr);
      EXPECT_EQ(codes->dtype, w.dtype);
      EXPECT_EQ(codes->dims, w.dims);
      EXPECT_FALSE(codes->quant.quantized());
      EXPECT_EQ(std::vector<uint8_t>(codes->data.data(), codes->data.data() + codes->data.size()),
                std::vector<uint8_t>(w.data.data(), w.data.data() + w.data.size()));
      const ir::Tensor* scale = m.graph.FindInitializer(dq.inputs[1]);
      ASSERT_NE(scale, nullptr);
      EXPECT_EQ(scale->dtype, ir::DType::kF32);
      EXPECT_EQ(scale->dims, ir::QuantParamDims(w));
      if (asym) {
        EXPECT_EQ(dq.inputs[2], "W.zero_point");
      }
    }
  }
}

TEST(OnnxExportTest, RefusesForeignDomainsByName) {
  ir::Model m = ImportText(Header(17) + R"(
g (float[2,4] x) => (float[2,3] y) {
  W = Constant <value = float[3,4] {)" + Floats(12, 2) + R"(}> ()
  y = Gemm <transB = 1> (x, W)
}
)");
  m.graph.nodes[0].domain = "com.example";
  EXPECT_THAT(PrepareForOnnxRuntime(m, {}).status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("node 'y' (Gemm) of domain 'com.example' cannot be exported")));
  OnnxExportOptions ort;
  ort.profile = OnnxProfile::kOrt;
  m.graph.nodes[0].domain = "com.microsoft";
  EXPECT_THAT(PrepareForOnnxRuntime(m, ort).status(), IsOk());
}

}  // namespace
}  // namespace slimpack::onnx_export

namespace slimpack::onnx_export {
namespace {

using ::slimpack::passes::testing::ImportText;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

// FP8 weights need opset 21: ReduceMean's axes become an input (opset 18),
// an equal Split gets num_outputs (required from 18), the other nodes stay
// as they are, IR version 10.
TEST(RaiseOpsetTo21Test, MovesReduceAxesToInputsAndKeepsTheRest) {
  ir::Model m = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,1] y, float y2, float[2,2] a, float[2,2] b) {
  sq = Mul(x, x)
  ms = ReduceMean <axes = [-1], keepdims = 1> (sq)
  y = Sqrt(ms)
  y2 = ReduceMean <keepdims = 0> (x)
  a, b = Split <axis = 1> (x)
})");
  ASSERT_THAT(RaiseDefaultOpsetTo21(m, "test weights"), IsOk());
  EXPECT_EQ(m.opset_imports.at(""), 21);
  EXPECT_GE(m.ir_version, 10);
  ASSERT_EQ(m.graph.nodes.size(), 5u);
  EXPECT_EQ(m.graph.nodes[4].IntAttrOr("num_outputs", 0), 2);
  EXPECT_EQ(m.graph.nodes[4].inputs.size(), 1u);
  const ir::Node& mean = m.graph.nodes[1];
  EXPECT_EQ(mean.op_type, "ReduceMean");
  ASSERT_EQ(mean.inputs.size(), 2u);
  EXPECT_EQ(mean.FindAttribute("axes"), nullptr);
  EXPECT_EQ(mean.IntAttrOr("keepdims", 0), 1);
  const ir::Tensor* axes = m.graph.FindInitializer(mean.inputs[1]);
  ASSERT_NE(axes, nullptr);
  EXPECT_EQ(axes->dtype, ir::DType::kI64);
  ASSERT_EQ(axes->data.size(), sizeof(int64_t));
  int64_t axis = 0;
  std::memcpy(&axis, axes->data.data(), sizeof axis);
  EXPECT_EQ(axes->dims, std::vector<int64_t>{1});
  EXPECT_EQ(axis, -1);
  // Without axes (all of them) the node is the same at 18.
  EXPECT_EQ(m.graph.nodes[3].inputs.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].op_type, "Mul");
  EXPECT_EQ(m.graph.nodes[2].op_type, "Sqrt");
  // Raising again changes nothing.
  const size_t inits = m.graph.initializers().size();
  ASSERT_THAT(RaiseDefaultOpsetTo21(m, "test weights"), IsOk());
  EXPECT_EQ(m.graph.initializers().size(), inits);
}

TEST(RaiseOpsetTo21Test, RefusesWhatItCannotRaiseAndChangesNothing) {
  ir::Model m = ImportText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,1] y, int64[2] i) {
  y = ReduceMean <axes = [-1], keepdims = 1> (x)
  i = NonZero(x)
})");
  EXPECT_THAT(RaiseDefaultOpsetTo21(m, "FP8 weights"),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr("(NonZero): FP8 weights need opset 21"),
                             HasSubstr("from opset 17 is not implemented"))));
  EXPECT_EQ(m.opset_imports.at(""), 17);
  EXPECT_NE(m.graph.nodes[0].FindAttribute("axes"), nullptr);
  ir::Model old = ImportText(R"(<ir_version: 7, opset_import: ["" : 12]>
g (float[2,4] x) => (float[2,4] y) {
  y = Relu(x)
})");
  EXPECT_THAT(RaiseDefaultOpsetTo21(old, "FP8 weights"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("from opset 12")));
}

}  // namespace
}  // namespace slimpack::onnx_export
