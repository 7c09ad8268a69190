// ExportOnnx specifics: file naming, atomic replacement (no temporaries left,
// safe over its own mmapped source), alignment, refusals, defaults for
// hand-built IR.
#include "formats/onnx/onnx_writer.h"

#include <sys/stat.h>

#include "ir/printer.h"
#include "formats/onnx/onnx_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/onnx/onnx_fixture_models.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_format {
namespace {

using ::slimpack::onnx_format::testing::Bytes;
using ::slimpack::onnx_format::testing::FixtureModels;
using ::slimpack::onnx_format::testing::ListDir;
using ::slimpack::onnx_format::testing::ReadFile;
using ::slimpack::onnx_format::testing::ScratchDir;
using ::slimpack::onnx_format::testing::ValuesOf;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ir::Model ImportFixture(const std::string& name, const ScratchDir& dir) {
  for (const auto& f : FixtureModels()) {
    if (f.name == name) f.write(dir.path());
  }
  auto model = ImportOnnx(dir.File("source.onnx"));
  EXPECT_THAT(model, IsOk());
  return model.ok() ? std::move(*model) : ir::Model();
}

OnnxExportOptions External(uint64_t threshold) {
  OnnxExportOptions options;
  options.use_external_data = true;
  options.external_data_threshold = threshold;
  return options;
}

TEST(OnnxWriterTest, WritesDataFileBesideModelAndNoTemporaries) {
  ScratchDir src, out;
  ir::Model model = ImportFixture("ExternalData", src);
  ASSERT_THAT(ExportOnnx(model, out.File("net.v2.onnx"), External(1024)),
              IsOk());
  EXPECT_THAT(ListDir(out.path()), ElementsAre("net.v2.data", "net.v2.onnx"));
  // w (8 KiB) goes to offset 0; b (128 bytes) is below the threshold and
  // stays embedded.
  EXPECT_EQ(ReadFile(out.File("net.v2.data")).size(), 64u * 32 * 4);
  auto again = ImportOnnx(out.File("net.v2.onnx"));
  ASSERT_THAT(again, IsOk());
  EXPECT_TRUE(again->graph.FindInitializer("w")->data.is_view());
  EXPECT_EQ(again->graph.FindInitializer("w")->provenance.file,
            out.File("net.v2.data"));
  EXPECT_EQ(again->graph.FindInitializer("b")->provenance.file,
            out.File("net.v2.onnx"));
}

TEST(OnnxWriterTest, HonoursCustomDataFileNameAndAlignsEveryTensor) {
  ScratchDir src, out;
  ir::Model model = ImportFixture("AllDtypes", src);
  OnnxExportOptions options = External(0);
  options.external_data_file = "weights.bin";
  ASSERT_THAT(ExportOnnx(model, out.File("m.onnx"), options), IsOk());
  EXPECT_THAT(ListDir(out.path()), ElementsAre("m.onnx", "weights.bin"));
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(ReadFile(out.File("m.onnx"))));
  std::string data = ReadFile(out.File("weights.bin"));
  ASSERT_EQ(proto.graph().initializer_size(), 13);
  uint64_t expected_offset = 0;
  for (const auto& t : proto.graph().initializer()) {
    ASSERT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL) << t.name();
    ASSERT_EQ(t.external_data_size(), 3);
    EXPECT_EQ(t.external_data(0).value(), "weights.bin");
    uint64_t offset = std::stoull(t.external_data(1).value());
    uint64_t length = std::stoull(t.external_data(2).value());
    EXPECT_EQ(offset, expected_offset) << t.name();
    EXPECT_EQ(offset % 64, 0u);
    const ir::Tensor* src_t = model.graph.FindInitializer(t.name());
    ASSERT_NE(src_t, nullptr);
    ASSERT_EQ(length, src_t->data.size());
    EXPECT_EQ(data.substr(offset, length),
              std::string(reinterpret_cast<const char*>(src_t->data.data()),
                          length));
    // Padding up to the next tensor is zero.
    uint64_t end = offset + length;
    expected_offset = (end + 63) / 64 * 64;
    if (expected_offset <= data.size()) {
      EXPECT_EQ(data.substr(end, expected_offset - end),
                std::string(expected_offset - end, '\0'));
    }
  }
}

TEST(OnnxWriterTest, ForcesExternalDataAboveTheEmbeddedLimit) {
  ScratchDir src, out;
  ir::Model model = ImportFixture("ExternalData", src);
  OnnxExportOptions options;  // external data off...
  options.max_embedded_tensor_bytes = 8000;  // ...but 8320 bytes of tensors
  ASSERT_THAT(ExportOnnx(model, out.File("m.onnx"), options), IsOk());
  EXPECT_THAT(ListDir(out.path()), ElementsAre("m.data", "m.onnx"));
  auto again = ImportOnnx(out.File("m.onnx"));
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->graph.FindInitializer("w")->provenance.file,
            out.File("m.data"));
  // Below the limit nothing changes.
  ScratchDir out2;
  options.max_embedded_tensor_bytes = 8320;
  ASSERT_THAT(ExportOnnx(model, out2.File("m.onnx"), options), IsOk());
  EXPECT_THAT(ListDir(out2.path()), ElementsAre("m.onnx"));
}

TEST(OnnxWriterTest, RejectsDataFileNamesOutsideTheModelDirectory) {
  ScratchDir src, out;
  ir::Model model = ImportFixture("Basic", src);
  for (const char* name : {"../w.data", "sub/w.data", "..", "m.onnx"}) {
    OnnxExportOptions options = External(0);
    options.external_data_file = name;
    EXPECT_THAT(ExportOnnx(model, out.File("m.onnx"), options),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(out.File("m.onnx"))))
        << name;
  }
  EXPECT_THAT(ListDir(out.path()), ::testing::IsEmpty());
}

TEST(OnnxWriterTest, RefusesAnInvalidModelWithTheVerifierError) {
  ScratchDir src, out;
  ir::Model model = ImportFixture("Basic", src);
  model.graph.nodes[0].inputs[1] = "ghost";
  EXPECT_THAT(ExportOnnx(model, out.File("m.onnx")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("refusing to export an invalid model")));
  EXPECT_THAT(ListDir(out.path()), ::testing::IsEmpty());
}

TEST(OnnxWriterTest, MissingOutputDirectoryIsNotFound) {
  ScratchDir src, out;
  ir::Model model = ImportFixture("Basic", src);
  EXPECT_THAT(ExportOnnx(model, out.File("no/such/dir/m.onnx")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no/such/dir/m.onnx")));
}

TEST(OnnxWriterTest, FailedRenameLeavesNoTemporaries) {
  // The target name is taken by a directory, so the final rename fails
  // after the temporary file was fully written.
  ScratchDir src, out;
  ir::Model model = ImportFixture("Basic", src);
  ASSERT_EQ(::mkdir(out.File("m.onnx").c_str(), 0755), 0);
  EXPECT_THAT(ExportOnnx(model, out.File("m.onnx")),
              StatusIs(absl::StatusCode::kUnknown,
                       HasSubstr("m.onnx: rename: Is a directory")));
  EXPECT_THAT(ListDir(out.path()), ElementsAre("m.onnx"));
}

TEST(OnnxWriterTest, OverwritingItsOwnMmappedSourceIsSafe) {
  // Export over the files the model's tensors are still mapped from: the
  // temp+rename protocol leaves the old inode (and mapping) intact.
  ScratchDir dir, scratch;
  ir::Model model = ImportFixture("ExternalData", scratch);
  ASSERT_THAT(ExportOnnx(model, dir.File("m.onnx"), External(0)), IsOk());
  auto mapped = ImportOnnx(dir.File("m.onnx"));
  ASSERT_THAT(mapped, IsOk());
  ASSERT_TRUE(mapped->graph.FindInitializer("w")->data.is_view());
  const std::string printed = ir::PrintGraph(mapped->graph);
  ASSERT_THAT(ExportOnnx(*mapped, dir.File("m.onnx"), External(0)), IsOk());
  EXPECT_EQ(ir::PrintGraph(mapped->graph), printed);
  auto again = ImportOnnx(dir.File("m.onnx"));
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(ir::PrintGraph(again->graph), printed);
  EXPECT_THAT(ListDir(dir.path()), ElementsAre("m.data", "m.onnx"));
}

TEST(OnnxWriterTest, FillsOnnxDefaultsForHandBuiltIr) {
  ir::Model model;  // as a safetensors import would build it
  ir::Tensor w;
  w.name = "w";
  w.dtype = ir::DType::kF32;
  w.dims = {2};
  w.data = ir::TensorData::Owned({0, 0, 128, 63, 0, 0, 0, 64});  // 1.0, 2.0
  ASSERT_THAT(model.graph.AddInitializer(w), IsOk());
  model.graph.inputs.push_back({"x", ir::DType::kF32, ir::Shape::FromDims({2})});
  ir::Node add;
  add.op_type = "Add";
  add.inputs = {"x", "w"};
  add.outputs = {"y"};
  model.graph.nodes.push_back(add);
  model.graph.outputs.push_back({"y", ir::DType::kF32, ir::Shape::FromDims({2})});
  ScratchDir out;
  ASSERT_THAT(ExportOnnx(model, out.File("m.onnx")), IsOk());
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(ReadFile(out.File("m.onnx"))));
  EXPECT_EQ(proto.ir_version(), 8);
  ASSERT_EQ(proto.opset_import_size(), 1);
  EXPECT_EQ(proto.opset_import(0).version(), 17);
  EXPECT_EQ(proto.graph().name(), "main");
  auto again = ImportOnnx(out.File("m.onnx"));
  ASSERT_THAT(again, IsOk());
  EXPECT_THAT(ValuesOf<float>(again->graph.FindInitializer("w")->data),
              ElementsAre(1.0f, 2.0f));
  EXPECT_EQ(again->graph.nodes[0].name, "Add_0");
}

TEST(OnnxWriterTest, PackedInt4WeightsRoundTrip) {
  ScratchDir src, out;
  ir::Model model = ImportFixture("Basic", src);
  ir::Tensor q;
  q.name = "q";
  q.dtype = ir::DType::kI4;
  q.dims = {5};
  q.data = ir::TensorData::Owned({0x21, 0x43, 0x05});
  ASSERT_THAT(model.graph.AddInitializer(q), IsOk());
  for (const auto& options : {OnnxExportOptions(), External(0)}) {
    ASSERT_THAT(ExportOnnx(model, out.File("m.onnx"), options), IsOk());
    auto again = ImportOnnx(out.File("m.onnx"));
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ(ir::PrintGraph(again->graph), ir::PrintGraph(model.graph));
    EXPECT_EQ(again->graph.FindInitializer("q")->dtype, ir::DType::kI4);
  }
}

}  // namespace
}  // namespace slimpack::onnx_format
