// Corruption table for the ONNX importer (bad-inputs.md #1, #6, #8, #12,
// #23-#30): one hand-made bad model per failure mode, each expecting a
// specific status code, the model path, and substrings naming the tensor,
// node or value and the problem.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>

#include "formats/onnx/graph_from_proto.h"
#include "formats/onnx/onnx_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_format {
namespace {

using ::slimpack::onnx_format::testing::AddModel;
using ::slimpack::onnx_format::testing::Bytes;
using ::slimpack::onnx_format::testing::FloatTensor;
using ::slimpack::onnx_format::testing::MakeExternal;
using ::slimpack::onnx_format::testing::ParseModel;
using ::slimpack::onnx_format::testing::ScratchDir;
using ::slimpack::onnx_format::testing::WriteFile;
using ::slimpack::onnx_format::testing::WriteModel;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;
using Mutation = std::function<void(onnx::ModelProto*, const ScratchDir&)>;

std::string ModelPath(const ScratchDir& dir) { return dir.File("model.onnx"); }

// A valid model (x + w) with `mutate` applied, written as model.onnx.
std::function<void(const ScratchDir&)> AddModelWith(Mutation mutate) {
  return [mutate](const ScratchDir& dir) {
    onnx::ModelProto proto = AddModel();
    *proto.mutable_graph()->add_initializer() =
        FloatTensor("w", {4}, {1, 2, 3, 4});
    mutate(&proto, dir);
    WriteModel(proto, ModelPath(dir));
  };
}

onnx::TensorProto* W(onnx::ModelProto* m) {
  return m->mutable_graph()->mutable_initializer(0);
}

// `w` moved to external data with the given keys; `file_bytes` (if not
// null) written as w.data.
Mutation ExternalW(std::vector<std::pair<std::string, std::string>> keys,
                   const char* file_bytes = nullptr, size_t file_size = 0) {
  return [keys, file_bytes, file_size](onnx::ModelProto* m,
                                       const ScratchDir& dir) {
    MakeExternal(W(m), keys);
    if (file_bytes) {
      WriteFile(dir.File("w.data"), std::string(file_bytes, file_size));
    }
  };
}

const char kSixteen[] = "0123456789abcdef";

// A chain of If nodes `depth` levels deep: the graph at level k holds an If
// whose then_branch is level k+1 (else_branch is a leaf, so the size stays
// linear in depth).
onnx::GraphProto NestedIfs(int depth) {
  onnx::GraphProto leaf = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
leaf () => (float[1] out) { out = Constant <value = float[1] {1.0}> () }
)ONNX").graph();
  onnx::GraphProto g = std::move(leaf);
  for (int level = 0; level < depth; ++level) {
    onnx::GraphProto parent = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
level (bool c) => (float[1] out) { out = If(c) <then_branch = t () => (float[1] a) { a = Constant <value = float[1] {1.0}> () }, else_branch = e () => (float[1] b) { b = Constant <value = float[1] {1.0}> () }> }
)ONNX").graph();
    parent.clear_input();
    *parent.mutable_node(0)->mutable_attribute(0)->mutable_g() = std::move(g);
    g = std::move(parent);
  }
  return g;
}

struct BadCase {
  std::string name;
  std::function<void(const ScratchDir&)> write;  // creates model.onnx etc.
  Code code;
  std::vector<std::string> substrings;  // besides the model path
};

std::vector<BadCase> BadCases() {
  std::vector<BadCase> cases = {
      {"EmptyFile",
       [](const ScratchDir& d) { WriteFile(ModelPath(d), ""); },
       Code::kInvalidArgument, {"empty (0 bytes)"}},
      {"GarbageBytes",
       [](const ScratchDir& d) { WriteFile(ModelPath(d), std::string(64, '\xff')); },
       Code::kInvalidArgument, {"not a valid ONNX ModelProto"}},
      {"TruncatedInsideRawData",
       [](const ScratchDir& d) {
         onnx::ModelProto m = AddModel();
         *m.mutable_graph()->add_initializer() =
             FloatTensor("w", {1024}, std::vector<float>(1024, 1.0f));
         std::string bytes = m.SerializeAsString();
         WriteFile(ModelPath(d), bytes.substr(0, bytes.size() / 2));
       },
       Code::kInvalidArgument, {"not a valid ONNX ModelProto", "truncated"}},
      {"MissingModelFile", [](const ScratchDir&) {}, Code::kNotFound, {}},
      {"ModelFileOf2GiB",
       [](const ScratchDir& d) {
         // Sparse: rejected from its size before a byte is read.
         int fd = ::open(ModelPath(d).c_str(), O_CREAT | O_WRONLY, 0644);
         ASSERT_GE(fd, 0);
         ASSERT_EQ(::ftruncate(fd, off_t{1} << 31), 0);
         ::close(fd);
       },
       Code::kInvalidArgument, {"2147483648 bytes", "under 2 GiB", "external data"}},
      {"NoIrVersion",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) { m->clear_ir_version(); }),
       Code::kInvalidArgument, {"ir_version is missing"}},
      {"NoGraph",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) { m->clear_graph(); }),
       Code::kInvalidArgument, {"model has no graph"}},
      {"RawDataSizeMismatch",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         W(m)->set_raw_data(std::string(12, '\0'));
       }),
       Code::kInvalidArgument,
       {"initializer 'w'", "raw_data has 12 bytes, expected 16 for f32[4]"}},
      {"RawAndTypedData",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         for (int i = 0; i < 4; ++i) W(m)->add_float_data(1.0f);
       }),
       Code::kInvalidArgument, {"initializer 'w'", "both raw_data and typed"}},
      {"UndefinedDataType",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         W(m)->set_data_type(onnx::TensorProto::UNDEFINED);
       }),
       Code::kInvalidArgument, {"initializer 'w'", "data_type is missing or UNDEFINED"}},
      {"MissingDataType",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) { W(m)->clear_data_type(); }),
       Code::kInvalidArgument, {"initializer 'w'", "data_type is missing"}},
      {"UnknownDataTypeCode",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) { W(m)->set_data_type(99); }),
       Code::kUnimplemented, {"initializer 'w'", "code 99 is not supported", "FLOAT16"}},
      {"NegativeDim",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) { W(m)->set_dims(0, -4); }),
       Code::kInvalidArgument, {"initializer 'w'", "dim 0 is -4"}},
      {"ShapeOverflowWrappingToFour",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         W(m)->clear_dims();
         for (int64_t d : {4194305ll, 4194305ll, 211106198978564ll}) W(m)->add_dims(d);
       }),
       Code::kInvalidArgument, {"initializer 'w'", "overflows"}},
      {"StringTensor",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         W(m)->set_data_type(onnx::TensorProto::STRING);
         W(m)->clear_raw_data();
         for (int i = 0; i < 4; ++i) W(m)->add_string_data("s");
       }),
       Code::kUnimplemented, {"initializer 'w'", "STRING is not supported"}},
      {"SegmentedTensor",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         W(m)->mutable_segment()->set_begin(0);
       }),
       Code::kUnimplemented, {"initializer 'w'", "segmented"}},
      {"AbsoluteLocation",
       AddModelWith(ExternalW({{"location", "/etc/passwd"}})),
       Code::kInvalidArgument, {"initializer 'w'", "'/etc/passwd' is absolute"}},
      {"DotDotLocation", AddModelWith(ExternalW({{"location", "../w.data"}})),
       Code::kInvalidArgument, {"initializer 'w'", "'..' component"}},
      {"NestedDotDotLocation",
       AddModelWith(ExternalW({{"location", "sub/../../x"}})),
       Code::kInvalidArgument, {"initializer 'w'", "'sub/../../x' has a '..'"}},
      {"OrtMemAddrMarker",
       AddModelWith(ExternalW({{"location", "*/_ORT_MEM_ADDR_/*"}, {"offset", "4096"}})),
       Code::kInvalidArgument, {"initializer 'w'", "in-memory address marker"}},
      {"ExternalWithoutLocation",
       AddModelWith(ExternalW({{"offset", "0"}, {"length", "16"}})),
       Code::kInvalidArgument, {"initializer 'w'", "no 'location' key"}},
      {"DuplicateLocationKey",
       AddModelWith(ExternalW({{"location", "w.data"}, {"location", "/etc/passwd"}},
                              kSixteen, 16)),
       Code::kInvalidArgument, {"initializer 'w'", "'location' appears twice"}},
      {"ExternalPlusEmbeddedData",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir& d) {
         ExternalW({{"location", "w.data"}}, kSixteen, 16)(m, d);
         W(m)->set_raw_data(std::string(16, '\0'));
       }),
       Code::kInvalidArgument, {"initializer 'w'", "also has embedded data"}},
      {"MissingExternalFile",
       AddModelWith(ExternalW({{"location", "missing.data"}})),
       Code::kNotFound, {"initializer 'w'", "'missing.data' does not exist"}},
      {"LocationIsADirectory",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir& d) {
         ::mkdir(d.File("dir.data").c_str(), 0755);
         MakeExternal(W(m), {{"location", "dir.data"}});
       }),
       Code::kInvalidArgument, {"initializer 'w'", "'dir.data' is not a regular file"}},
      {"SymlinkedExternalFile",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir& d) {
         WriteFile(d.File("real.data"), kSixteen);
         ::symlink("real.data", d.File("w.data").c_str());
         MakeExternal(W(m), {{"location", "w.data"}});
       }),
       Code::kInvalidArgument, {"initializer 'w'", "'w.data' is or passes through a symbolic link"}},
      {"SymlinkedDirectory",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir& d) {
         ::mkdir(d.File("real").c_str(), 0755);
         WriteFile(d.File("real/w.data"), kSixteen);
         ::symlink("real", d.File("linked").c_str());
         MakeExternal(W(m), {{"location", "linked/w.data"}});
       }),
       Code::kInvalidArgument, {"initializer 'w'", "'linked/w.data' is or passes through a symbolic link"}},
      {"HardLinkedExternalFile",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir& d) {
         WriteFile(d.File("other.data"), kSixteen);
         ::link(d.File("other.data").c_str(), d.File("w.data").c_str());
         MakeExternal(W(m), {{"location", "w.data"}});
       }),
       Code::kInvalidArgument, {"initializer 'w'", "has 2 hard links"}},
      {"OffsetPlusLengthPastEof",
       AddModelWith(ExternalW({{"location", "w.data"}, {"offset", "8"}, {"length", "16"}},
                              kSixteen, 16)),
       Code::kOutOfRange, {"initializer 'w'", "w.data' is 16 bytes; offset 8 + length 16 is past its end"}},
      {"OffsetPlusLengthOverflows",
       AddModelWith(ExternalW({{"location", "w.data"}, {"offset", "9223372036854775807"}},
                              kSixteen, 16)),
       Code::kOutOfRange, {"initializer 'w'", "offset 9223372036854775807 + length 16"}},
      {"OffsetBeyondInt64",
       AddModelWith(ExternalW({{"location", "w.data"}, {"offset", "99999999999999999999"}},
                              kSixteen, 16)),
       Code::kOutOfRange, {"initializer 'w'", "offset '99999999999999999999' exceeds"}},
      {"NegativeOffset",
       AddModelWith(ExternalW({{"location", "w.data"}, {"offset", "-8"}}, kSixteen, 16)),
       Code::kInvalidArgument, {"initializer 'w'", "offset '-8' is negative"}},
      {"NonNumericLength",
       AddModelWith(ExternalW({{"location", "w.data"}, {"length", "16abc"}}, kSixteen, 16)),
       Code::kInvalidArgument, {"initializer 'w'", "length '16abc' is not a non-negative decimal integer"}},
      {"LengthDisagreesWithShape",
       AddModelWith(ExternalW({{"location", "w.data"}, {"length", "8"}}, kSixteen, 16)),
       Code::kInvalidArgument, {"initializer 'w'", "length 8 does not match the 16 bytes"}},
      {"ChecksumMismatch",
       AddModelWith(ExternalW({{"location", "w.data"},
                               {"checksum", "0000000000000000000000000000000000000000"}},
                              kSixteen, 16)),
       Code::kDataLoss, {"initializer 'w'", "w.data' has SHA-1"}},
      {"ChecksumNotHex",
       AddModelWith(ExternalW({{"location", "w.data"}, {"checksum", "xyz"}}, kSixteen, 16)),
       Code::kInvalidArgument, {"initializer 'w'", "checksum 'xyz' is not a 40-digit"}},
      {"NodeInputNeverDefined",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         m->mutable_graph()->mutable_node(0)->set_input(1, "nowhere");
       }),
       Code::kInvalidArgument, {"node 'Add_0' (Add) input 1 'nowhere' is not defined"}},
      {"NodeWithoutOpType",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         m->mutable_graph()->mutable_node(0)->clear_op_type();
       }),
       Code::kInvalidArgument, {"has no op type"}},
      {"NodeOutputRedefinesInitializer",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         auto* n = m->mutable_graph()->add_node();
         n->set_op_type("Relu");
         n->set_name("relu_w");
         n->add_input("x");
         n->add_output("w");
       }),
       Code::kInvalidArgument, {"value 'w' is defined twice", "relu_w"}},
      {"CycleBetweenNodes",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         auto* g = m->mutable_graph();
         g->mutable_node(0)->set_input(0, "b");
         auto* n = g->add_node();
         n->set_op_type("Relu");
         n->set_name("back_edge");
         n->add_input("y");
         n->add_output("b");
       }),
       Code::kFailedPrecondition, {"cycle"}},
      {"DuplicateInitializerNames",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         *m->mutable_graph()->add_initializer() = FloatTensor("w", {4}, {5, 6, 7, 8});
       }),
       Code::kInvalidArgument, {"initializer 'w' is defined more than once"}},
      {"ConstantOutputShadowsInitializer",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         auto* c = m->mutable_graph()->add_node();
         c->set_op_type("Constant");
         c->set_name("dup_w");
         c->add_output("w");
         auto* a = c->add_attribute();
         a->set_name("value_float");
         a->set_type(onnx::AttributeProto::FLOAT);
         a->set_f(1.0f);
       }),
       Code::kInvalidArgument, {"node 'dup_w' (Constant)", "initializer 'w' is defined more than once"}},
      {"ConstantWithTwoValues",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         auto* c = m->mutable_graph()->add_node();
         c->set_op_type("Constant");
         c->add_output("k");
         for (const char* key : {"value_float", "value_int"}) {
           auto* a = c->add_attribute();
           a->set_name(key);
           a->set_f(1);
         }
       }),
       Code::kInvalidArgument, {"node 'Constant_1' (Constant)", "exactly one value attribute, found 2"}},
      {"SparseConstant",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         auto* c = m->mutable_graph()->add_node();
         c->set_op_type("Constant");
         c->add_output("k");
         auto* a = c->add_attribute();
         a->set_name("sparse_value");
         a->set_type(onnx::AttributeProto::SPARSE_TENSOR);
       }),
       Code::kUnimplemented, {"node 'Constant_1' (Constant)", "sparse_value is not supported"}},
      {"TypeProtoAttribute",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         auto* a = m->mutable_graph()->mutable_node(0)->add_attribute();
         a->set_name("tp");
         a->set_type(onnx::AttributeProto::TYPE_PROTO);
       }),
       Code::kUnimplemented, {"node 'Add_0' (Add): attribute 'tp'", "TYPE_PROTO is not supported", "GRAPHS"}},
      {"DuplicateAttribute",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         for (int i = 0; i < 2; ++i) {
           auto* a = m->mutable_graph()->mutable_node(0)->add_attribute();
           a->set_name("alpha");
           a->set_type(onnx::AttributeProto::INT);
         }
       }),
       Code::kInvalidArgument, {"node 'Add_0' (Add)", "'alpha' appears more than once"}},
      {"SparseInitializer",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         m->mutable_graph()->add_sparse_initializer();
       }),
       Code::kUnimplemented, {"sparse_initializer"}},
      {"StringGraphInput",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         m->mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()
             ->set_elem_type(onnx::TensorProto::STRING);
       }),
       Code::kUnimplemented, {"graph input", "value 'x' has element type STRING"}},
      {"SequenceGraphOutput",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         m->mutable_graph()->mutable_output(0)->mutable_type()->mutable_sequence_type();
       }),
       Code::kUnimplemented, {"graph output", "value 'y' has a sequence type"}},
      // Older opsets are upgraded (onnx_opset_upgrade_test.cc) unless the
      // version converter refuses: Mod does not exist at opset 8.
      {"OpsetBelowRangeNotUpgradable",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         m->mutable_opset_import(0)->set_version(8);
         m->mutable_graph()->mutable_node(0)->set_op_type("Mod");
       }),
       Code::kUnimplemented,
       {"cannot upgrade default-domain opset 8 to 9: onnx.checker", "Mod",
        "re-export the model with an opset in 9 to 17"}},
      {"OpsetAboveRange",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         m->mutable_opset_import(0)->set_version(21);
       }),
       Code::kUnimplemented, {"opset 21 is not supported", "9 to 17"}},
      {"NoDefaultDomainOpset",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         m->mutable_opset_import(0)->set_domain("com.microsoft");
       }),
       Code::kInvalidArgument, {"no entry for the default ONNX domain"}},
      {"ModelLocalFunctions",
       AddModelWith([](onnx::ModelProto* m, const ScratchDir&) {
         m->add_functions()->set_name("MyGelu");
       }),
       Code::kUnimplemented, {"model-local functions", "'MyGelu'"}},
      {"BadTensorInsideIfBranch",
       [](const ScratchDir& d) {
         onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (bool c) => (float[2] y) {
  y = If(c) <then_branch = then_g () => (float[2] t) { t = Constant <value = float[2] {1.0, 2.0}> () },
             else_branch = else_g () => (float[2] e) { e = Constant <value = float[2] {3.0, 4.0}> () }>
}
)ONNX");
         auto* t = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)
                       ->mutable_g()->mutable_node(0)->mutable_attribute(0)->mutable_t();
         t->set_dims(0, -2);
         WriteModel(m, ModelPath(d));
       },
       Code::kInvalidArgument,
       {"node 'If_0' (If): attribute 'then_branch': subgraph 'then_g': node 'Constant_0' (Constant): attribute 'value': dim 0 is -2"}},
      {"SubgraphsNestedTooDeep",
       [](const ScratchDir& d) {
         onnx::ModelProto m = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (bool c) => (float[1] out) { out = Identity(c) }
)ONNX");
         *m.mutable_graph() = NestedIfs(kMaxSubgraphDepth + 1);
         auto* c = m.mutable_graph()->add_input();
         c->set_name("c");
         c->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
         WriteModel(m, ModelPath(d));
       },
       Code::kInvalidArgument, {"nested 17 levels deep; at most 16"}},
  };
  return cases;
}

// Keeps ctest names readable (gtest would dump the struct's bytes).
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class OnnxBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(OnnxBadInputTest, FailsWithSpecificCodeNamingFileAndObject) {
  const BadCase& c = GetParam();
  ScratchDir dir;
  c.write(dir);
  auto result = ImportOnnx(ModelPath(dir));
  EXPECT_THAT(result, StatusIs(c.code, HasSubstr(ModelPath(dir))));
  for (const std::string& s : c.substrings) {
    EXPECT_THAT(result, StatusIs(c.code, HasSubstr(s)));
  }
}

INSTANTIATE_TEST_SUITE_P(Table, OnnxBadInputTest,
                         ::testing::ValuesIn(BadCases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace slimpack::onnx_format
