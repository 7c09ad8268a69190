// Fixture model builders (ONNX text syntax plus ModelProto edits for what
// the text syntax cannot express: typed fields, external data, lists of
// tensors/graphs).
#include "tests/onnx/onnx_fixture_models.h"

#include "onnx/onnx_pb.h"
#include "tests/onnx/onnx_test_util.h"

namespace slimpack::onnx_format::testing {
namespace {

void Save(const onnx::ModelProto& m, const std::string& dir) {
  WriteModel(m, dir + "/source.onnx");
}

void Basic(const std::string& dir) {
  onnx::ModelProto m = AddModel();
  *m.mutable_graph()->add_initializer() =
      FloatTensor("w", {4}, {0.5f, -1.0f, 2.0f, 1e-3f});
  Save(m, dir);
}

void ConstantWeights(const std::string& dir) {
  // Paddle2ONNX style: every weight a Constant node, nodes unnamed.
  onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 7, opset_import: ["" : 11], producer_name: "PaddlePaddle">
paddle (float[1, 2, 4, 4] image) => (float[1, 3] logits) {
  conv_w = Constant <value = float[3, 2, 1, 1] {1.0, 0.5, -1.0, 0.25, 2.0, 0.0}> ()
  conv_b = Constant <value = float[3] {0.1, 0.2, 0.3}> ()
  axes = Constant <value_ints = [2, 3]> ()
  scale = Constant <value_float = 0.5> ()
  conv = Conv <kernel_shape = [1, 1]> (image, conv_w, conv_b)
  pooled = ReduceMean <axes = [2, 3], keepdims = 0> (conv)
  logits = Mul(pooled, scale)
}
)ONNX");
  Save(m, dir);
}

void IfSubgraph(const std::string& dir) {
  onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
if_graph (float[4] x, bool c) => (float[4] y) {
  scale = Constant <value = float[4] {2.0, 2.0, 2.0, 2.0}> ()
  y = If(c) <
    then_branch = then_g () => (float[4] t) {
      bias = Constant <value = float[4] {1.0, 2.0, 3.0, 4.0}> ()
      s = Mul(x, scale)
      t = Add(s, bias)
    },
    else_branch = else_g () => (float[4] e) {
      e = Neg(x)
    }>
}
)ONNX");
  Save(m, dir);
}

void Fp16Weights(const std::string& dir) {
  onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
half (float16[2, 3] x) => (float16[2, 3] y, float[2, 3] z) {
  y = Add(x, w16)
  yf = Cast <to = 1> (y)
  bf = Cast <to = 1> (wbf)
  z = Add(yf, bf)
}
)ONNX");
  // f16 weights in int32_data (what onnx.helper.make_tensor writes) ...
  auto* w16 = m.mutable_graph()->add_initializer();
  w16->set_name("w16");
  w16->set_data_type(onnx::TensorProto::FLOAT16);
  w16->add_dims(3);
  for (int bits : {0x3c00, 0xc000, 0x3555}) w16->add_int32_data(bits);
  // ... and bf16 in raw_data.
  *m.mutable_graph()->add_initializer() = RawTensor(
      "wbf", onnx::TensorProto::BFLOAT16, {3},
      Bytes<uint16_t>({0x3f80, 0x4000, 0xc040}));
  Save(m, dir);
}

void ExternalData(const std::string& dir) {
  onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
ext (float[2, 64] x) => (float[2, 32] y) {
  h = MatMul(x, w)
  y = Add(h, b)
}
)ONNX");
  std::vector<float> w(64 * 32);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 17) - 8;
  std::vector<float> b(32);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.125f * i;
  std::string file = Bytes(w);
  file.resize(12288, '\0');  // b at a 4096-aligned offset, as onnx advises
  file += Bytes(b);
  WriteFile(dir + "/source_weights.bin", file);
  auto* wt = m.mutable_graph()->add_initializer();
  *wt = FloatTensor("w", {64, 32}, {});
  MakeExternal(wt, {{"location", "source_weights.bin"},
                    {"offset", "0"},
                    {"length", std::to_string(w.size() * 4)}});
  auto* bt = m.mutable_graph()->add_initializer();
  *bt = FloatTensor("b", {32}, {});
  MakeExternal(bt, {{"location", "source_weights.bin"}, {"offset", "12288"}});
  Save(m, dir);
}

void EveryAttributeKind(const std::string& dir) {
  onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17, "custom.ops" : 1]>
attrs (float[2] x) => (float[2] y) {
  y = custom.ops.Everything <f = 1.5, i = -3, s = "txt", fs = [0.5, 1.5], is = [4, 5, 6], ss = ["a", "b"], t = int64[2] {7, 8}> (x)
}
)ONNX");
  auto* node = m.mutable_graph()->mutable_node(0);
  node->set_name("everything");
  auto* ts = node->add_attribute();
  ts->set_name("ts");
  ts->set_type(onnx::AttributeProto::TENSORS);
  *ts->add_tensors() = FloatTensor("t0", {1}, {9.0f});
  *ts->add_tensors() = FloatTensor("t1", {2}, {1.0f, 2.0f});
  auto* gs = node->add_attribute();
  gs->set_name("gs");
  gs->set_type(onnx::AttributeProto::GRAPHS);
  onnx::ModelProto sub = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
body (float[2] in) => (float[2] out) { out = Relu(in) }
)ONNX");
  *gs->add_graphs() = sub.graph();
  gs->mutable_graphs(0)->set_name("body0");
  *gs->add_graphs() = sub.graph();
  gs->mutable_graphs(1)->set_name("body1");
  Save(m, dir);
}

void InitializerAsInput(const std::string& dir) {
  onnx::ModelProto m = AddModel();
  m.set_ir_version(3);
  m.mutable_opset_import(0)->set_version(9);
  *m.mutable_graph()->add_initializer() = FloatTensor("w", {4}, {1, 2, 3, 4});
  auto* input = m.mutable_graph()->add_input();
  input->set_name("w");
  auto* type = input->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_value(4);
  Save(m, dir);
}

void AllDtypes(const std::string& dir) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  m.mutable_graph()->set_name("dtypes");
  struct D {
    const char* name;
    int32_t type;
    std::string bytes;  // three elements
  };
  const std::vector<D> dtypes = {
      {"f32", onnx::TensorProto::FLOAT, Bytes<float>({1, -2, 3})},
      {"f16", onnx::TensorProto::FLOAT16, Bytes<uint16_t>({0x3c00, 0, 0xbc00})},
      {"bf16", onnx::TensorProto::BFLOAT16, Bytes<uint16_t>({0x3f80, 0, 0xbf80})},
      {"f64", onnx::TensorProto::DOUBLE, Bytes<double>({1e100, 0, -1})},
      {"i64", onnx::TensorProto::INT64, Bytes<int64_t>({-1, 0, 1ll << 40})},
      {"i32", onnx::TensorProto::INT32, Bytes<int32_t>({-7, 0, 7})},
      {"i16", onnx::TensorProto::INT16, Bytes<int16_t>({-300, 0, 300})},
      {"i8", onnx::TensorProto::INT8, Bytes<int8_t>({-100, 0, 100})},
      {"u64", onnx::TensorProto::UINT64, Bytes<uint64_t>({0, 1, 1ull << 63})},
      {"u32", onnx::TensorProto::UINT32, Bytes<uint32_t>({0, 1, 1u << 31})},
      {"u16", onnx::TensorProto::UINT16, Bytes<uint16_t>({0, 1, 65535})},
      {"u8", onnx::TensorProto::UINT8, Bytes<uint8_t>({0, 1, 255})},
      {"bool", onnx::TensorProto::BOOL, Bytes<uint8_t>({1, 0, 1})},
  };
  auto* g = m.mutable_graph();
  for (const D& d : dtypes) {
    std::string init = std::string("t_") + d.name;
    std::string out = std::string("o_") + d.name;
    *g->add_initializer() = RawTensor(init, d.type, {3}, d.bytes);
    auto* node = g->add_node();
    node->set_op_type("Identity");
    node->set_name(std::string("id_") + d.name);
    node->add_input(init);
    node->add_output(out);
    auto* o = g->add_output();
    o->set_name(out);
    auto* tt = o->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(d.type);
    tt->mutable_shape()->add_dim()->set_dim_value(3);
  }
  Save(m, dir);
}

void LoopWithScanOutputs(const std::string& dir) {
  // A Loop whose body reads an outer-scope weight and defines a Constant.
  onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
loop_graph (int64 trip, bool cond, float[3] init) => (float[3] final, float[N, 3] scan) {
  step = Constant <value = float[3] {0.5, 0.5, 0.5}> ()
  final, scan = Loop(trip, cond, init) <body = body (int64 i, bool c_in, float[3] acc) => (bool c_out, float[3] acc_out, float[3] emitted) {
    c_out = Identity(c_in)
    one = Constant <value = float[3] {1.0, 1.0, 1.0}> ()
    partial = Add(acc, step)
    acc_out = Add(partial, one)
    emitted = Identity(acc_out)
  }>
}
)ONNX");
  Save(m, dir);
}

}  // namespace

std::vector<FixtureModel> FixtureModels() {
  return {
      {"Basic", Basic},
      {"ConstantWeights", ConstantWeights},
      {"IfSubgraph", IfSubgraph},
      {"Fp16Weights", Fp16Weights},
      {"ExternalData", ExternalData},
      {"EveryAttributeKind", EveryAttributeKind},
      {"InitializerAsInput", InitializerAsInput},
      {"AllDtypes", AllDtypes},
      {"LoopWithScanOutputs", LoopWithScanOutputs},
  };
}

}  // namespace slimpack::onnx_format::testing
