// ImportOnnx on valid models: graph structure, Constant-node weights,
// subgraphs, node naming, attributes, value info, shape inference, opsets.
#include "formats/onnx/onnx_importer.h"

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_format {
namespace {

using ::slimpack::onnx_format::testing::AddModel;
using ::slimpack::onnx_format::testing::FloatTensor;
using ::slimpack::onnx_format::testing::ParseModel;
using ::slimpack::onnx_format::testing::ScratchDir;
using ::slimpack::onnx_format::testing::ValuesOf;
using ::slimpack::onnx_format::testing::WriteModel;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

OnnxImportOptions NoInference() {
  OnnxImportOptions options;
  options.run_shape_inference = false;
  return options;
}

absl::StatusOr<ir::Model> WriteAndImport(const onnx::ModelProto& proto,
                                         const ScratchDir& dir,
                                         const OnnxImportOptions& options = {}) {
  std::string path = dir.File("model.onnx");
  testing::WriteModel(proto, path);
  return ImportOnnx(path, options);
}

TEST(OnnxImporterTest, ImportsInitializerAsZeroCopyView) {
  ScratchDir dir;
  onnx::ModelProto proto = AddModel();
  *proto.mutable_graph()->add_initializer() =
      FloatTensor("w", {4}, {1.5f, -2.0f, 3.25f, 0.0f});
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());

  EXPECT_EQ(model->source_path, dir.File("model.onnx"));
  EXPECT_THAT(model->input_files, ElementsAre(dir.File("model.onnx")));
  EXPECT_EQ(model->ir_version, 8);
  EXPECT_EQ(model->producer_name, "slimpack-test");
  EXPECT_THAT(model->opset_imports, ElementsAre(Pair("", 17)));
  const ir::Graph& g = model->graph;
  EXPECT_EQ(g.name, "add_graph");
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].dtype, ir::DType::kF32);
  EXPECT_EQ(g.inputs[0].shape.ToString(), "[N,4]");
  const ir::Tensor* w = g.FindInitializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, ir::DType::kF32);
  EXPECT_THAT(w->dims, ElementsAre(4));
  EXPECT_TRUE(w->data.is_view());
  EXPECT_THAT(ValuesOf<float>(w->data), ElementsAre(1.5f, -2.0f, 3.25f, 0.0f));
  EXPECT_EQ(w->provenance.file, dir.File("model.onnx"));
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].name, "Add_0");
  EXPECT_THAT(g.nodes[0].inputs, ElementsAre("x", "w"));
}

TEST(OnnxImporterTest, ViewsOutliveNothingButTheModel) {
  // The proto owner travels with the tensor: copying a tensor out of a model
  // that is then destroyed must keep its bytes readable (ASan checks this).
  ScratchDir dir;
  onnx::ModelProto proto = AddModel();
  *proto.mutable_graph()->add_initializer() =
      FloatTensor("w", {4}, {1, 2, 3, 4});
  ir::Tensor copy;
  {
    auto model = WriteAndImport(proto, dir);
    ASSERT_THAT(model, IsOk());
    copy = *model->graph.FindInitializer("w");
  }
  EXPECT_THAT(ValuesOf<float>(copy.data), ElementsAre(1, 2, 3, 4));
}

TEST(OnnxImporterTest, ConstantNodesBecomeInitializersNamedAfterOutput) {
  ScratchDir dir;
  onnx::ModelProto proto = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
paddle_like (float[2] x) => (float[2] y, int64[3] shape) {
  w = Constant <value = float[2] {0.5, 4.0}> ()
  a = Constant <value_float = 2.5> ()
  fs = Constant <value_floats = [1.0, 2.0, 3.0]> ()
  i = Constant <value_int = 7> ()
  shape = Constant <value_ints = [1, -1, 2]> ()
  h = Mul(x, w)
  y = Add(h, a)
}
)ONNX");
  proto.mutable_graph()->mutable_node(0)->set_name("conv1.w_0");
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  const ir::Graph& g = model->graph;

  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op_type, "Mul");
  EXPECT_EQ(g.nodes[1].op_type, "Add");
  ASSERT_EQ(g.initializers().size(), 5u);

  const ir::Tensor* w = g.FindInitializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_THAT(ValuesOf<float>(w->data), ElementsAre(0.5f, 4.0f));
  EXPECT_THAT(w->provenance.source_nodes, ElementsAre("conv1.w_0"));

  const ir::Tensor* a = g.FindInitializer("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, ir::DType::kF32);
  EXPECT_THAT(a->dims, IsEmpty());
  EXPECT_THAT(ValuesOf<float>(a->data), ElementsAre(2.5f));
  // Unnamed Constant nodes are named <op_type>_<index>.
  EXPECT_THAT(a->provenance.source_nodes, ElementsAre("Constant_1"));

  const ir::Tensor* fs = g.FindInitializer("fs");
  ASSERT_NE(fs, nullptr);
  EXPECT_THAT(fs->dims, ElementsAre(3));
  EXPECT_THAT(ValuesOf<float>(fs->data), ElementsAre(1.0f, 2.0f, 3.0f));

  const ir::Tensor* i = g.FindInitializer("i");
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->dtype, ir::DType::kI64);
  EXPECT_THAT(ValuesOf<int64_t>(i->data), ElementsAre(7));

  const ir::Tensor* shape = g.FindInitializer("shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->dtype, ir::DType::kI64);
  EXPECT_THAT(ValuesOf<int64_t>(shape->data), ElementsAre(1, -1, 2));
}

TEST(OnnxImporterTest, StringConstantStaysANode) {
  ScratchDir dir;
  onnx::ModelProto proto = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) {
  label = Constant <value_string = "hello"> ()
  y = Identity(x)
}
)ONNX");
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  ASSERT_EQ(model->graph.nodes.size(), 2u);
  EXPECT_EQ(model->graph.nodes[0].op_type, "Constant");
  const ir::Attribute* s = model->graph.nodes[0].FindAttribute("value_string");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->s, "hello");
  EXPECT_THAT(model->graph.initializers(), IsEmpty());
}

constexpr char kIfModel[] = R"ONNX(
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
)ONNX";

TEST(OnnxImporterTest, IfSubgraphKeepsOuterScopeRefsAndItsOwnConstants) {
  ScratchDir dir;
  auto model = WriteAndImport(ParseModel(kIfModel), dir);
  ASSERT_THAT(model, IsOk());
  const ir::Graph& g = model->graph;
  ASSERT_NE(g.FindInitializer("scale"), nullptr);
  ASSERT_EQ(g.nodes.size(), 1u);
  const ir::Node& if_node = g.nodes[0];
  EXPECT_EQ(if_node.op_type, "If");
  EXPECT_EQ(if_node.name, "If_1");
  const ir::Attribute* then_attr = if_node.FindAttribute("then_branch");
  ASSERT_NE(then_attr, nullptr);
  ASSERT_EQ(then_attr->kind, ir::Attribute::Kind::kGraph);
  const ir::Graph& then_g = *then_attr->g;
  EXPECT_EQ(then_g.name, "then_g");
  const ir::Tensor* bias = then_g.FindInitializer("bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_THAT(ValuesOf<float>(bias->data), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(bias->provenance.source_nodes, ElementsAre("Constant_0"));
  ASSERT_EQ(then_g.nodes.size(), 2u);
  EXPECT_THAT(then_g.OuterScopeReferences(),
              ::testing::UnorderedElementsAre("x", "scale"));
  const ir::Attribute* else_attr = if_node.FindAttribute("else_branch");
  ASSERT_NE(else_attr, nullptr);
  EXPECT_EQ(else_attr->g->nodes[0].op_type, "Neg");
}

TEST(OnnxImporterTest, UnnamedAndDuplicateNodesGetUniqueNames) {
  ScratchDir dir;
  onnx::ModelProto proto = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) {
  a = Relu(x)
  b = Relu(a)
  c = Relu(b)
  d = Relu(c)
  y = Relu(d)
}
)ONNX");
  auto* nodes = proto.mutable_graph()->mutable_node();
  (*nodes)[0].set_name("act");
  (*nodes)[1].set_name("act");    // duplicate of node 0
  // node 2 stays unnamed; node 3 already carries the name node 2 would get
  (*nodes)[3].set_name("Relu_2");
  (*nodes)[4].set_name("act");    // second duplicate
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  std::vector<std::string> names;
  for (const auto& n : model->graph.nodes) names.push_back(n.name);
  EXPECT_THAT(names, ElementsAre("act", "act_1", "Relu_2_1", "Relu_2", "act_2"));
  // Provenance keeps what the user wrote.
  EXPECT_THAT(model->graph.nodes[1].provenance.source_nodes, ElementsAre("act"));
  EXPECT_THAT(model->graph.nodes[2].provenance.source_nodes,
              ElementsAre("Relu_2_1"));
  EXPECT_THAT(model->warnings,
              ::testing::Contains(HasSubstr("renamed to 'act_1'")));
}

TEST(OnnxImporterTest, ImportsAttributesOfEveryKind) {
  ScratchDir dir;
  onnx::ModelProto proto = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17, "custom.ops" : 1]>
g (float[2] x) => (float[2] y) {
  y = custom.ops.Everything <f = 1.5, i = -3, s = "txt", fs = [0.5, 1.5], is = [4, 5, 6], ss = ["a", "b"], t = int64[2] {7, 8}> (x)
}
)ONNX");
  auto* node = proto.mutable_graph()->mutable_node(0);
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
  *gs->add_graphs() = sub.graph();
  // Old exporters leave `type` unset; it is recovered from the value.
  auto* untyped = node->add_attribute();
  untyped->set_name("untyped");
  untyped->set_i(42);

  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  const ir::Node& n = model->graph.nodes[0];
  EXPECT_EQ(n.domain, "custom.ops");
  EXPECT_EQ(n.FindAttribute("f")->f, 1.5f);
  EXPECT_EQ(n.FindAttribute("i")->i, -3);
  EXPECT_EQ(n.FindAttribute("s")->s, "txt");
  EXPECT_THAT(n.FindAttribute("fs")->floats, ElementsAre(0.5f, 1.5f));
  EXPECT_THAT(n.FindAttribute("is")->ints, ElementsAre(4, 5, 6));
  EXPECT_THAT(n.FindAttribute("ss")->strings, ElementsAre("a", "b"));
  const ir::Attribute* t = n.FindAttribute("t");
  ASSERT_EQ(t->kind, ir::Attribute::Kind::kTensor);
  EXPECT_THAT(ValuesOf<int64_t>(t->t->data), ElementsAre(7, 8));
  const ir::Attribute* tensors = n.FindAttribute("ts");
  ASSERT_EQ(tensors->kind, ir::Attribute::Kind::kTensors);
  ASSERT_EQ(tensors->tensors.size(), 2u);
  EXPECT_THAT(ValuesOf<float>(tensors->tensors[1]->data), ElementsAre(1, 2));
  const ir::Attribute* graphs = n.FindAttribute("gs");
  ASSERT_EQ(graphs->kind, ir::Attribute::Kind::kGraphs);
  ASSERT_EQ(graphs->graphs.size(), 2u);
  EXPECT_EQ(graphs->graphs[1]->nodes[0].op_type, "Relu");
  const ir::Attribute* u = n.FindAttribute("untyped");
  ASSERT_EQ(u->kind, ir::Attribute::Kind::kInt);
  EXPECT_EQ(u->i, 42);
  EXPECT_THAT(model->opset_imports,
              ElementsAre(Pair("", 17), Pair("custom.ops", 1)));
}

TEST(OnnxImporterTest, ValueInfoKeepsSymbolicAndUnknownDims) {
  ScratchDir dir;
  onnx::ModelProto proto = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (float[batch, ?, 3] x, x2) => (y) {
  y = Add(x, x2)
}
)ONNX");
  auto model = WriteAndImport(proto, dir, NoInference());
  ASSERT_THAT(model, IsOk());
  const auto& in = model->graph.inputs;
  ASSERT_EQ(in.size(), 2u);
  ASSERT_EQ(in[0].shape.rank(), 3u);
  EXPECT_EQ(in[0].shape.dim(0).symbol, "batch");
  EXPECT_FALSE(in[0].shape.dim(1).is_static());
  EXPECT_TRUE(in[0].shape.dim(1).symbol.empty());
  EXPECT_EQ(in[0].shape.dim(2).value, 3);
  // No type at all: undefined dtype and unknown rank.
  EXPECT_EQ(in[1].dtype, ir::DType::kUndefined);
  EXPECT_FALSE(in[1].shape.rank_known());
}

constexpr char kInferenceModel[] = R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 4] x) => (float[N, 4] y) {
  h = Relu(x)
  k = Transpose <perm = [1, 0]> (h)
  y = Transpose <perm = [1, 0]> (k)
}
)ONNX";

TEST(OnnxImporterTest, ShapeInferenceRecordsIntermediateValueInfo) {
  ScratchDir dir;
  auto model = WriteAndImport(ParseModel(kInferenceModel), dir);
  ASSERT_THAT(model, IsOk());
  const auto& vi = model->graph.value_info;
  ASSERT_EQ(vi.count("h"), 1u);
  EXPECT_EQ(vi.at("h").dtype, ir::DType::kF32);
  EXPECT_EQ(vi.at("h").shape.ToString(), "[N,4]");
  ASSERT_EQ(vi.count("k"), 1u);
  EXPECT_EQ(vi.at("k").shape.ToString(), "[4,N]");
  EXPECT_THAT(model->warnings, IsEmpty());
}

TEST(OnnxImporterTest, ShapeInferenceCanBeTurnedOff) {
  ScratchDir dir;
  auto model = WriteAndImport(ParseModel(kInferenceModel), dir,
                              NoInference());
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(model->graph.value_info, IsEmpty());
}

TEST(OnnxImporterTest, ShapeInferenceFailureIsAWarningNotAnError) {
  ScratchDir dir;
  // MatMul of [2,3] by [4,5] cannot be inferred; the import still succeeds,
  // and the lenient retry still types `h`, which comes before the failure.
  onnx::ModelProto proto = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] a, float[4, 5] b) => (float[2, 5] y) {
  h = Relu(a)
  y = MatMul(h, b)
}
)ONNX");
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(model->warnings,
              ::testing::Contains(HasSubstr("shape inference failed")));
  ASSERT_EQ(model->graph.value_info.count("h"), 1u);
  EXPECT_EQ(model->graph.value_info.at("h").shape.ToString(), "[2,3]");
}

TEST(OnnxImporterTest, ShapeInferenceLeavesLargeTypedWeightsIntact) {
  // Payloads above 4 KiB are moved out of the model while it is copied for
  // inference and moved back afterwards.
  ScratchDir dir;
  onnx::ModelProto proto = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2048] x) => (float[2048] y) { y = Add(x, w) }
)ONNX");
  auto* w = proto.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2048);
  std::vector<float> expected;
  for (int i = 0; i < 2048; ++i) {
    w->add_float_data(i * 0.5f);
    expected.push_back(i * 0.5f);
  }
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(ValuesOf<float>(model->graph.FindInitializer("w")->data),
              ::testing::ElementsAreArray(expected));
}

TEST(OnnxImporterTest, LargeOneDimensionalIntTensorsStillFeedShapeInference) {
  // A 600-element int64 table (4800 bytes) sliced into a Reshape target:
  // data propagation must see its values.
  ScratchDir dir;
  onnx::ModelProto proto = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (float[6] x) => (float[?, ?] y)
<int64[1] starts = {0}, int64[1] ends = {2}>
{
  target = Slice(table, starts, ends)
  r = Reshape(x, target)
  y = Identity(r)
}
)ONNX");
  std::vector<int64_t> table(600, 1);
  table[0] = 2;
  table[1] = 3;
  *proto.mutable_graph()->add_initializer() = testing::RawTensor(
      "table", onnx::TensorProto::INT64, {600}, testing::Bytes(table));
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(model->warnings, IsEmpty());
  ASSERT_EQ(model->graph.value_info.count("r"), 1u);
  EXPECT_EQ(model->graph.value_info.at("r").shape.ToString(), "[2,3]");
}

TEST(OnnxImporterTest, InitializerThatIsAlsoAGraphInputIsAccepted) {
  ScratchDir dir;
  onnx::ModelProto proto = AddModel();
  proto.set_ir_version(3);
  *proto.mutable_graph()->add_initializer() = FloatTensor("w", {4}, {1, 2, 3, 4});
  auto* input = proto.mutable_graph()->add_input();
  input->set_name("w");
  input->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->graph.inputs.size(), 2u);
  EXPECT_NE(model->graph.FindInitializer("w"), nullptr);
}

TEST(OnnxImporterTest, NewerOpsetIsAWarningWhenAllowed) {
  ScratchDir dir;
  onnx::ModelProto proto = AddModel();
  *proto.mutable_graph()->add_initializer() = FloatTensor("w", {4}, {1, 2, 3, 4});
  proto.mutable_opset_import(0)->set_version(18);
  EXPECT_THAT(WriteAndImport(proto, dir),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("opset 18 is not supported")));
  OnnxImportOptions options;
  options.allow_newer_opset = true;
  auto model = WriteAndImport(proto, dir, options);
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(model->opset_imports, ElementsAre(Pair("", 18)));
  EXPECT_THAT(model->warnings, ::testing::Contains(HasSubstr("opset 18")));
}

TEST(OnnxImporterTest, AiOnnxDomainIsTheDefaultDomain) {
  ScratchDir dir;
  onnx::ModelProto proto = AddModel();
  *proto.mutable_graph()->add_initializer() = FloatTensor("w", {4}, {1, 2, 3, 4});
  proto.mutable_opset_import(0)->set_domain("ai.onnx");
  proto.mutable_opset_import(0)->set_version(9);
  proto.mutable_graph()->mutable_node(0)->set_domain("ai.onnx");
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(model->opset_imports, ElementsAre(Pair("", 9)));
  EXPECT_EQ(model->graph.nodes[0].domain, "");
}

TEST(OnnxImporterTest, KeepsModelMetadata) {
  ScratchDir dir;
  onnx::ModelProto proto = AddModel();
  *proto.mutable_graph()->add_initializer() = FloatTensor("w", {4}, {1, 2, 3, 4});
  proto.set_producer_version("1.2.3");
  proto.set_domain("org.example");
  proto.set_model_version(5);
  proto.set_doc_string("a doc");
  auto* prop = proto.add_metadata_props();
  prop->set_key("author");
  prop->set_value("me");
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->producer_version, "1.2.3");
  EXPECT_EQ(model->model_domain, "org.example");
  EXPECT_EQ(model->model_version, 5);
  EXPECT_EQ(model->doc_string, "a doc");
  EXPECT_THAT(model->metadata_props, ElementsAre(Pair("author", "me")));
}

TEST(OnnxImporterTest, ParsesEmbeddedModelsAboveTheOld64MiBProtobufLimit) {
  ScratchDir dir;
  onnx::ModelProto proto = AddModel();
  constexpr int64_t kElems = (80 << 20) / 4;  // 80 MiB of f32
  std::string bytes(kElems * 4, '\0');
  for (int64_t i = 0; i < kElems; i += 4096) {
    float v = static_cast<float>(i);
    std::memcpy(&bytes[i * 4], &v, 4);
  }
  *proto.mutable_graph()->add_initializer() = testing::RawTensor(
      "w", onnx::TensorProto::FLOAT, {kElems / 4, 4}, bytes);
  auto model = WriteAndImport(proto, dir);
  ASSERT_THAT(model, IsOk());
  const ir::Tensor* w = model->graph.FindInitializer("w");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->data.size(), static_cast<uint64_t>(kElems) * 4);
  float last;
  std::memcpy(&last, w->data.data() + (kElems - 4096) * 4, 4);
  EXPECT_EQ(last, static_cast<float>(kElems - 4096));
}

}  // namespace
}  // namespace slimpack::onnx_format
