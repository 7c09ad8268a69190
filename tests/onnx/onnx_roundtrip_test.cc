// Import -> export -> re-import gives an identical PrintGraph (which hashes
// every initializer) for every fixture model and export layout, and a
// second export reproduces the first byte for byte.
#include <tuple>

#include "ir/printer.h"
#include "formats/onnx/onnx_importer.h"
#include "formats/onnx/onnx_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/onnx/onnx_fixture_models.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_format {
namespace {

using ::slimpack::onnx_format::testing::FixtureModel;
using ::slimpack::onnx_format::testing::FixtureModels;
using ::slimpack::onnx_format::testing::ReadFile;
using ::slimpack::onnx_format::testing::ScratchDir;
using ::slimpack::testing::IsOk;
using ::testing::ElementsAre;

struct Layout {
  std::string name;
  OnnxExportOptions options;
};

std::vector<Layout> Layouts() {
  OnnxExportOptions all_external;
  all_external.use_external_data = true;
  all_external.external_data_threshold = 0;
  OnnxExportOptions large_external;
  large_external.use_external_data = true;
  large_external.external_data_threshold = 64;
  return {{"Embedded", {}},
          {"AllExternal", all_external},
          {"LargeExternal", large_external}};
}

void PrintTo(const Layout& l, std::ostream* os) { *os << l.name; }

std::vector<std::string> Describe(const std::vector<ir::ValueInfo>& infos) {
  std::vector<std::string> out;
  for (const auto& v : infos) {
    out.push_back(v.name + ":" + std::string(ir::DTypeName(v.dtype)) +
                  v.shape.ToString());
  }
  return out;
}

std::vector<std::string> Describe(
    const std::map<std::string, ir::ValueInfo>& infos) {
  std::vector<ir::ValueInfo> values;
  for (const auto& [name, v] : infos) values.push_back(v);
  return Describe(values);
}

// Offsets of every external tensor in the top-level graph of `path`.
std::vector<uint64_t> ExternalOffsets(const std::string& path) {
  onnx::ModelProto proto;
  EXPECT_TRUE(proto.ParseFromString(ReadFile(path)));
  std::vector<uint64_t> offsets;
  for (const auto& t : proto.graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "offset") offsets.push_back(std::stoull(kv.value()));
    }
  }
  return offsets;
}

// Tensors (initializers and tensor attributes, recursively) of at least
// `threshold` bytes: the ones the writer must place in external data.
int CountTensorsAtLeast(const ir::Graph& g, uint64_t threshold) {
  int n = 0;
  for (const auto& t : g.initializers()) n += t.data.size() >= threshold;
  for (const auto& node : g.nodes) {
    for (const auto& [name, a] : node.attributes) {
      if (a.t) n += a.t->data.size() >= threshold;
      for (const auto& t : a.tensors) n += t->data.size() >= threshold;
      if (a.g) n += CountTensorsAtLeast(*a.g, threshold);
      for (const auto& sub : a.graphs) n += CountTensorsAtLeast(*sub, threshold);
    }
  }
  return n;
}

class RoundTripTest
    : public ::testing::TestWithParam<std::tuple<FixtureModel, Layout>> {};

TEST_P(RoundTripTest, ReimportIsIdenticalAndReexportIsAFixpoint) {
  const auto& [fixture, layout] = GetParam();
  ScratchDir src_dir, out_dir, again_dir;
  fixture.write(src_dir.path());
  auto source = ImportOnnx(src_dir.File("source.onnx"));
  ASSERT_THAT(source, IsOk());

  const std::string out = out_dir.File("model.onnx");
  ASSERT_THAT(ExportOnnx(*source, out, layout.options), IsOk());
  auto reimported = ImportOnnx(out);
  ASSERT_THAT(reimported, IsOk());

  EXPECT_EQ(ir::PrintGraph(reimported->graph), ir::PrintGraph(source->graph));
  EXPECT_EQ(Describe(reimported->graph.inputs), Describe(source->graph.inputs));
  EXPECT_EQ(Describe(reimported->graph.outputs),
            Describe(source->graph.outputs));
  EXPECT_EQ(Describe(reimported->graph.value_info),
            Describe(source->graph.value_info));
  EXPECT_EQ(reimported->opset_imports, source->opset_imports);
  EXPECT_EQ(reimported->producer_name, source->producer_name);
  EXPECT_EQ(reimported->metadata_props, source->metadata_props);
  EXPECT_EQ(reimported->graph.initializers().size(),
            source->graph.initializers().size());

  const bool expect_data_file =
      layout.options.use_external_data &&
      CountTensorsAtLeast(source->graph,
                          layout.options.external_data_threshold) > 0;
  if (expect_data_file) {
    EXPECT_THAT(reimported->input_files,
                ElementsAre(out, out_dir.File("model.data")));
    for (uint64_t offset : ExternalOffsets(out)) {
      EXPECT_EQ(offset % 64, 0u) << offset;
    }
  } else {
    EXPECT_THAT(reimported->input_files, ElementsAre(out));
  }

  const std::string again = again_dir.File("model.onnx");
  ASSERT_THAT(ExportOnnx(*reimported, again, layout.options), IsOk());
  EXPECT_EQ(ReadFile(again), ReadFile(out));
  EXPECT_EQ(ReadFile(again_dir.File("model.data")),
            ReadFile(out_dir.File("model.data")));
}

INSTANTIATE_TEST_SUITE_P(
    FixturesByLayout, RoundTripTest,
    ::testing::Combine(::testing::ValuesIn(FixtureModels()),
                       ::testing::ValuesIn(Layouts())),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + std::get<1>(info.param).name;
    });

}  // namespace
}  // namespace slimpack::onnx_format
