// ReadArtifactModel: ONNX fixtures and examples/tiny-llama round-trip
// through WriteArtifact with the same printed graph and the same bytes;
// quantized tensors keep their layouts and run in the interpreter exactly
// as their dequantized values do; malformed quant layouts in a manifest are
// rejected naming the artifact, the tensor and the value; wild architecture
// numbers in a manifest are refused naming the manifest's field and value.
#include "formats/shard/reader/artifact_reader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "eval/runnable_model.h"
#include "runtime/interpreter.h"
#include "ir/float_convert.h"
#include "formats/import.h"
#include "ir/printer.h"
#include "ir/quant.h"
#include "ir/verifier.h"
#include "formats/shard/loader/artifact.h"
#include "formats/shard/writer/artifact_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/shard/reader/gemm_fixture.h"
#include "tests/shard/writer/writer_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::shard_reader {
namespace {

using ::slimpack::shard_reader::testing::F32Tensor;
using ::slimpack::shard_reader::testing::RawTensor;
using ::slimpack::shard_writer::testing::Exists;
using ::slimpack::shard_writer::testing::ReadFile;
using ::slimpack::shard_writer::testing::RewriteManifest;
using ::slimpack::shard_writer::testing::TempDir;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kSource = SLIMPACK_SOURCE_DIR;

void ExpectSameTensor(const ir::Tensor& a, const ir::Tensor& b) {
  SCOPED_TRACE("tensor '" + a.name + "'");
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.dims, b.dims);
  EXPECT_EQ(a.role, b.role);
  EXPECT_EQ(a.layer, b.layer);
  EXPECT_TRUE(a.quant == b.quant);
  ASSERT_EQ(a.data.size(), b.data.size());
  EXPECT_EQ(0, std::memcmp(a.data.data(), b.data.data(), a.data.size()));
}

// The manifest lists a graph's initializers sorted by name (spec.md 6.1),
// so the insertion order is not kept: compare graphs printed with sorted
// initializers, subgraphs included.
ir::Graph SortedInitializers(const ir::Graph& g) {
  ir::Graph out;
  out.name = g.name;
  out.inputs = g.inputs;
  out.outputs = g.outputs;
  out.value_info = g.value_info;
  out.nodes = g.nodes;
  std::vector<const ir::Tensor*> inits;
  for (const ir::Tensor& t : g.initializers()) inits.push_back(&t);
  std::sort(inits.begin(), inits.end(),
            [](const ir::Tensor* a, const ir::Tensor* b) { return a->name < b->name; });
  for (const ir::Tensor* t : inits) (void)out.AddInitializer(*t);
  for (ir::Node& n : out.nodes) {
    for (auto& [key, a] : n.attributes) {
      if (a.g) a.g = std::make_shared<ir::Graph>(SortedInitializers(*a.g));
      for (auto& sub : a.graphs) sub = std::make_shared<ir::Graph>(SortedInitializers(*sub));
    }
  }
  return out;
}

std::string Printed(const ir::Graph& g) { return ir::PrintGraph(SortedInitializers(g)); }

absl::StatusOr<ir::Model> WriteAndRead(const ir::Model& m, const std::string& out,
                                       shard_writer::ArtifactOptions options = {}) {
  auto written = shard_writer::WriteArtifact(m, out, options);
  if (!written.ok()) return written.status();
  return ReadArtifactModel(out);
}

class OnnxRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxRoundTripTest, SameGraphAndBytes) {
  TempDir dir;
  std::string path = GetParam();
  if (path == "writer_fixture") {
    path = dir.File("fixture.onnx");
    shard_writer::testing::WriteOnnxFixture(path);
  } else {
    path = kSource + "/" + path;
  }
  auto src = formats::ImportModel(path);
  ASSERT_THAT(src, IsOk());
  auto back = WriteAndRead(*src, dir.File("out"));
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->source_format, ir::SourceFormat::kOnnx);
  EXPECT_EQ(Printed(back->graph), Printed(src->graph));
  EXPECT_EQ(back->ir_version, src->ir_version);
  EXPECT_EQ(back->opset_imports, src->opset_imports);
  EXPECT_EQ(back->producer_name, src->producer_name);
  EXPECT_EQ(back->metadata_props, src->metadata_props);
  ASSERT_EQ(back->graph.initializers().size(), src->graph.initializers().size());
  for (const ir::Tensor& t : src->graph.initializers()) {
    const ir::Tensor* b = back->graph.FindInitializer(t.name);
    ASSERT_NE(b, nullptr) << t.name;
    ExpectSameTensor(*b, t);
    if (!b->data.empty()) {
      EXPECT_TRUE(b->data.is_view());  // zero-copy into the shard mapping
    }
  }
  EXPECT_EQ(back->source_path, dir.File("out"));
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, OnnxRoundTripTest,
    ::testing::Values("tests/testdata/models/torch_mlp.onnx",
                      "tests/testdata/models/torch_encoder_block.onnx",
                      "tests/testdata/models/torch_script_if.onnx",
                      "tests/testdata/models/paddle_style.onnx",
                      "tests/testdata/onnx/if_subgraph.onnx",
                      "tests/testdata/onnx/fp16_helper.onnx",
                      "tests/testdata/onnx/paddle_constants.onnx", "writer_fixture"),
    [](const auto& info) {
      std::string n = info.param;
      n = n.substr(n.rfind('/') + 1);
      for (char& c : n) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return n;
    });

TEST(ArtifactReaderTest, TinyLlamaRoundTripsWithArchitectureAndCarriedFiles) {
  TempDir dir;
  auto src = formats::ImportModel(kSource + "/examples/tiny-llama");
  ASSERT_THAT(src, IsOk());
  auto back = WriteAndRead(*src, dir.File("out"));
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->source_format, ir::SourceFormat::kSafetensors);
  EXPECT_EQ(back->graph.name, "out");  // checkpoints have no graph name to keep
  back->graph.name = src->graph.name;
  EXPECT_EQ(Printed(back->graph), Printed(src->graph));
  ASSERT_EQ(back->graph.initializers().size(), src->graph.initializers().size());
  for (const ir::Tensor& t : src->graph.initializers()) {
    const ir::Tensor* b = back->graph.FindInitializer(t.name);
    ASSERT_NE(b, nullptr) << t.name;
    ExpectSameTensor(*b, t);
  }
  ASSERT_TRUE(back->architecture.has_value());
  const ir::ArchitectureInfo& a = *back->architecture;
  const ir::ArchitectureInfo& w = *src->architecture;
  EXPECT_EQ(a.model_type, w.model_type);
  EXPECT_EQ(a.known, w.known);
  EXPECT_EQ(a.num_layers, w.num_layers);
  EXPECT_EQ(a.num_kv_heads, w.num_kv_heads);
  EXPECT_EQ(a.head_dim, w.head_dim);
  EXPECT_EQ(a.rope_theta, w.rope_theta);
  EXPECT_EQ(a.norm_eps, w.norm_eps);
  EXPECT_EQ(a.tie_word_embeddings, w.tie_word_embeddings);
  EXPECT_EQ(w.source, ir::ArchitectureInfo::Source::kConfigJson);
  EXPECT_EQ(a.source, ir::ArchitectureInfo::Source::kManifest);  // errors name the manifest
  EXPECT_EQ(a.config_json, ReadFile(kSource + "/examples/tiny-llama/config.json"));
  EXPECT_THAT(back->carried_files,
              ::testing::UnorderedElementsAre(dir.File("out") + "/config.json",
                                              dir.File("out") + "/tokenizer.json"));
}

// A two-Gemm ONNX-origin model with an INT8 per-channel weight (zero
// point) and an INT4 group-wise one (group 3 over 8 inputs: a short last
// group), written by hand.
ir::Model QuantizedModel(const std::string& dir) {
  std::mt19937 rng(7);
  auto byte = [&rng] { return static_cast<uint8_t>(rng() & 0xFF); };
  ir::Model m = shard_reader::testing::OnnxOriginModel(dir);
  ir::Graph& g = m.graph;
  g.name = "quantized";
  g.inputs.push_back({"x", ir::DType::kF32, ir::Shape::FromDims({2, 8})});
  std::vector<uint8_t> w8(32), w4(16);
  for (auto& b : w8) b = byte();
  for (auto& b : w4) b = byte();
  ir::Tensor q8 = RawTensor("w8", ir::DType::kI8, {4, 8}, w8);
  q8.quant.kind = ir::QuantKind::kInt8PerChannel;
  q8.quant.axis = 0;
  q8.quant.scale = "w8.scale";
  q8.quant.zero_point = "w8.zero_point";
  q8.quant.algorithm = "rtn";
  ir::Tensor q4 = RawTensor("w4", ir::DType::kI4, {4, 8}, w4);
  q4.quant.kind = ir::QuantKind::kInt4GroupWise;
  q4.quant.axis = 1;
  q4.quant.group_size = 3;
  q4.quant.scale = "w4.scale";
  q4.quant.algorithm = "gptq";
  (void)g.AddInitializer(q8);
  (void)g.AddInitializer(F32Tensor("w8.scale", {4}, {0.01f, 0.02f, 0.5f, 3.0f}));
  (void)g.AddInitializer(RawTensor("w8.zero_point", ir::DType::kI8, {4}, {0, 3, 0xFE, 0x80}));
  (void)g.AddInitializer(q4);
  std::vector<float> s4(12);
  for (size_t i = 0; i < s4.size(); ++i) s4[i] = 0.125f * static_cast<float>(i + 1) / 3.0f;
  (void)g.AddInitializer(F32Tensor("w4.scale", {4, 3}, s4));
  for (const char* w : {"w8", "w4"}) {
    ir::Node n;
    n.name = std::string("gemm_") + w;
    n.op_type = "Gemm";
    n.inputs = {"x", w};
    n.outputs = {std::string("y_") + w};
    n.attributes["transB"] = ir::Attribute::Int(1);
    g.nodes.push_back(n);
    g.outputs.push_back({n.outputs[0], ir::DType::kF32, ir::Shape::FromDims({2, 4})});
  }
  return m;
}

// The same model with every quantized weight replaced by its f32 values.
ir::Model Dequantized(const ir::Model& q) {
  ir::Model m = q;
  ir::Graph g;
  g.name = q.graph.name;
  g.inputs = q.graph.inputs;
  g.outputs = q.graph.outputs;
  g.nodes = q.graph.nodes;
  for (const ir::Tensor& t : q.graph.initializers()) {
    if (!t.quant.quantized()) continue;
    const ir::Tensor* zp = q.graph.FindInitializer(t.quant.zero_point);
    auto d = ir::DequantizeTensor(t, *q.graph.FindInitializer(t.quant.scale), zp);
    EXPECT_THAT(d, IsOk());
    (void)g.AddInitializer(*d);
  }
  m.graph = std::move(g);
  return m;
}

std::vector<std::vector<float>> RunModel(const ir::Model& m) {
  auto interp = runtime::Interpreter::Create(m, {});
  EXPECT_THAT(interp, IsOk());
  if (!interp.ok()) return {};
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i)) * 2.0f;
  auto out = interp->Run({{"x", runtime::RtTensor::FromVector<float>({2, 8}, x)}});
  EXPECT_THAT(out, IsOk());
  std::vector<std::vector<float>> r;
  if (out.ok()) {
    for (const auto& t : *out) r.push_back(t.ToVector<float>());
  }
  return r;
}

TEST(QuantizedArtifactTest, LayoutsRoundTripAndRunAsTheirDequantizedValues) {
  TempDir dir;
  const ir::Model src = QuantizedModel(dir.path());
  ASSERT_THAT(ir::VerifyModel(src), IsOk());
  auto back = WriteAndRead(src, dir.File("out"));
  ASSERT_THAT(back, IsOk());
  for (const ir::Tensor& t : src.graph.initializers()) {
    const ir::Tensor* b = back->graph.FindInitializer(t.name);
    ASSERT_NE(b, nullptr) << t.name;
    ExpectSameTensor(*b, t);  // layout (algorithm included) and bytes
  }
  const auto want = RunModel(Dequantized(src));
  ASSERT_EQ(want.size(), 2u);
  EXPECT_EQ(RunModel(src), want);    // in memory
  EXPECT_EQ(RunModel(*back), want);  // from the artifact's mapped bytes
  // What `slimpack eval` / `run` load: an ONNX-origin artifact runs its graph.
  auto runnable = eval::LoadRunnableModel(dir.File("out"));
  ASSERT_THAT(runnable, IsOk());
  EXPECT_EQ(RunModel(*runnable), want);

  // The standalone loader's dequantization (SIMD and scalar) is the same
  // formula, bit for bit.
  auto a = loader::Artifact::Open(dir.File("out"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  for (const char* name : {"w8", "w4"}) {
    const ir::Tensor& q = *src.graph.FindInitializer(name);
    auto ref = ir::DequantizeToF32(q, *src.graph.FindInitializer(q.quant.scale),
                                   src.graph.FindInitializer(q.quant.zero_point));
    ASSERT_THAT(ref, IsOk());
    for (auto impl : {loader::DequantImpl::kBest, loader::DequantImpl::kScalar}) {
      std::vector<float> got(ref->size());
      ASSERT_TRUE((*a)->DequantizeToF32(name, got.data(), got.size(), impl).ok());
      EXPECT_EQ(0, std::memcmp(got.data(), ref->data(), got.size() * 4)) << name;
    }
  }
}

TEST(QuantizedArtifactTest, ManifestHasLayoutObjectsAndQuantRecords) {
  TempDir dir;
  ASSERT_THAT(shard_writer::WriteArtifact(QuantizedModel(dir.path()), dir.File("out"), {}),
              IsOk());
  const nlohmann::json m = nlohmann::json::parse(ReadFile(dir.File("out/manifest.json")));
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& t : m["tensors"]) by_name[t["name"].get<std::string>()] = t;
  EXPECT_EQ(by_name["w8"]["layout"],
            nlohmann::json::parse(R"({"axis": 0, "kind": "int8_per_channel",
                "scale": "w8.scale", "zero_point": "w8.zero_point"})"));
  EXPECT_EQ(by_name["w8"]["quant"],
            nlohmann::json::parse(
                R"({"algorithm": "rtn", "bits": 8, "group_size": 0, "symmetric": false})"));
  EXPECT_EQ(by_name["w4"]["layout"],
            nlohmann::json::parse(R"({"axis": 1, "group_size": 3, "kind": "int4_groupwise",
                "packing": "low_nibble_first", "scale": "w4.scale"})"));
  EXPECT_EQ(by_name["w4"]["quant"],
            nlohmann::json::parse(
                R"({"algorithm": "gptq", "bits": 4, "group_size": 3, "symmetric": true})"));
  EXPECT_EQ(by_name["w4.scale"]["layout"], nlohmann::json::parse(R"({"kind": "plain"})"));
  EXPECT_FALSE(by_name["w4.scale"].contains("quant"));
}

TEST(QuantizedArtifactTest, WriterRefusesAScaleCastToBf16) {
  TempDir dir;
  shard_writer::ArtifactOptions options;
  options.encoder = shard_writer::FloatCastEncoder(ir::DType::kBF16);
  EXPECT_THAT(shard_writer::WriteArtifact(QuantizedModel(dir.path()), dir.File("out"), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor 'w"),
                             HasSubstr("has dtype bf16, expected f32 or f16"))));
  EXPECT_FALSE(Exists(dir.File("out")));
}

// One edit of a valid manifest per row (self-hash recomputed, so only the
// layout is wrong); the error names the artifact, the tensor and the value.
struct BadManifest {
  const char* label;
  void (*edit)(nlohmann::json& tensor_by_name_w8, nlohmann::json& w4);
  absl::StatusCode code;
  std::vector<const char*> message;
};

class BadQuantManifestTest : public ::testing::TestWithParam<BadManifest> {};

TEST_P(BadQuantManifestTest, RejectedNamingArtifactTensorAndValue) {
  TempDir dir;
  const std::string out = dir.File("out");
  ASSERT_THAT(shard_writer::WriteArtifact(QuantizedModel(dir.path()), out, {}), IsOk());
  nlohmann::json m = nlohmann::json::parse(ReadFile(out + "/manifest.json"));
  nlohmann::json *w8 = nullptr, *w4 = nullptr;
  for (auto& t : m["tensors"]) {
    if (t["name"] == "w8") w8 = &t;
    if (t["name"] == "w4") w4 = &t;
  }
  ASSERT_TRUE(w8 && w4);
  GetParam().edit(*w8, *w4);
  ASSERT_NO_FATAL_FAILURE(RewriteManifest(out, m));
  auto r = ReadArtifactModel(out);
  ASSERT_THAT(r, StatusIs(GetParam().code, HasSubstr(out)));
  for (const char* s : GetParam().message) {
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(s));
  }
}

using J = nlohmann::json;
INSTANTIATE_TEST_SUITE_P(
    Table, BadQuantManifestTest,
    ::testing::Values(
        BadManifest{"AxisOutOfRange", [](J& w8, J&) { w8["layout"]["axis"] = 5; },
                    absl::StatusCode::kInvalidArgument, {"'w8'", "axis 5"}},
        BadManifest{"MissingScale", [](J& w8, J&) { w8["layout"]["scale"] = "w8.nope"; },
                    absl::StatusCode::kInvalidArgument, {"'w8'", "missing tensor 'w8.nope'"}},
        BadManifest{"KindVsDtype", [](J& w8, J&) { w8["layout"]["kind"] = "int4_groupwise"; },
                    absl::StatusCode::kInvalidArgument, {"'w8'", "found i8"}},
        BadManifest{"ScaleShapeForGroup", [](J&, J& w4) { w4["layout"]["group_size"] = 4; },
                    absl::StatusCode::kInvalidArgument, {"'w4'", "[4,3]", "[4,2]"}},
        BadManifest{"GroupSizeZero", [](J&, J& w4) { w4["layout"]["group_size"] = 0; },
                    absl::StatusCode::kInvalidArgument, {"'w4'", "group_size"}},
        BadManifest{"ZeroPointDtype",
                    [](J& w8, J&) { w8["layout"]["zero_point"] = "w8.scale"; },
                    absl::StatusCode::kInvalidArgument, {"'w8'", "dtype f32, expected i8"}},
        BadManifest{"UnknownKind", [](J& w8, J&) { w8["layout"]["kind"] = "int2_magic"; },
                    absl::StatusCode::kUnimplemented, {"'w8'", "int2_magic"}},
        BadManifest{"QuantRecordType", [](J& w8, J&) { w8["quant"]["algorithm"] = 5; },
                    absl::StatusCode::kInvalidArgument,
                    {"'w8'", "quant.algorithm must be a string, found 5"}}),
    [](const auto& info) { return std::string(info.param.label); });

TEST(QuantizedArtifactTest, InterpreterNamesAQuantizedWeightWithoutItsScale) {
  TempDir dir;
  ir::Model m = QuantizedModel(dir.path());
  ASSERT_TRUE(m.graph.RemoveInitializer("w4.scale"));
  EXPECT_THAT(runtime::Interpreter::Create(m, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor 'w4'"), HasSubstr("'w4.scale'"))));
}

TEST(QuantizedArtifactTest, QuantRecordDisagreeingWithLayoutIsAWarning) {
  TempDir dir;
  const std::string out = dir.File("out");
  ASSERT_THAT(shard_writer::WriteArtifact(QuantizedModel(dir.path()), out, {}), IsOk());
  auto clean = ReadArtifactModel(out);
  ASSERT_THAT(clean, IsOk());
  EXPECT_TRUE(clean->warnings.empty());
  nlohmann::json m = nlohmann::json::parse(ReadFile(out + "/manifest.json"));
  for (auto& t : m["tensors"]) {
    if (t["name"] == "w4") t["quant"]["bits"] = 3;
  }
  ASSERT_NO_FATAL_FAILURE(RewriteManifest(out, m));
  auto r = ReadArtifactModel(out);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_THAT(r->warnings[0], AllOf(HasSubstr("'w4'"), HasSubstr("bits 3"), HasSubstr("bits 4")));
}

// An artifact's architecture numbers are the manifest's: a wild one is
// refused before anything is sized from it, naming the manifest's field
// and value, never config.json (which the artifact also carries). head_dim
// 2^40 used to reach std::vector<float>(head_dim) in the graph builder,
// an uncaught std::bad_alloc (an abort under ASan), so getting a Status
// back at all shows no such allocation was attempted.
TEST(ArtifactReaderTest, WildManifestArchitectureIsRefusedNamingTheManifest) {
  TempDir dir;
  auto src = formats::ImportModel(kSource + "/examples/tiny-llama");
  ASSERT_THAT(src, IsOk());
  const std::string out = dir.File("out");
  ASSERT_THAT(shard_writer::WriteArtifact(*src, out, {}), IsOk());
  ASSERT_THAT(eval::LoadRunnableModel(out), IsOk());
  const nlohmann::json clean = nlohmann::json::parse(ReadFile(out + "/manifest.json"));
  struct Edit {
    const char* field;
    int64_t value;
    const char* says;
  };
  // tiny-llama: 4 layers, 4 heads (2 KV) of head_dim 32, hidden 128.
  const Edit edits[] = {
      {"head_dim", int64_t{1} << 40,
       "field 'head_dim' must be a positive integer up to 1073741824, found 1099511627776"},
      {"head_dim", 64,
       "field 'head_dim' (64) times 'num_heads' (4) = 256 rows does not match weight "
       "'model.layers.0.self_attn.q_proj.weight' [128,128]"},
      {"num_heads", 0, "field 'num_heads' must be a positive integer up to 1073741824, found 0"},
      {"num_layers", int64_t{1} << 40,
       "field 'num_layers' must be a positive integer up to 1073741824, found 1099511627776"},
      {"num_layers", 5,
       "field 'num_layers' (5) exceeds the layers of the checkpoint: no weight is named "
       "'model.layers.4.*'"},
  };
  for (const Edit& e : edits) {
    SCOPED_TRACE(std::string(e.field) + " = " + std::to_string(e.value));
    nlohmann::json m = clean;
    m["model"]["architecture"][e.field] = e.value;
    ASSERT_NO_FATAL_FAILURE(RewriteManifest(out, m));
    auto read = ReadArtifactModel(out);  // reading sizes nothing from them
    ASSERT_THAT(read, IsOk());
    auto runnable = eval::LoadRunnableModel(out);
    ASSERT_THAT(runnable, StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr(out + ": manifest.json architecture " + e.says)));
    const std::string message(runnable.status().message());
    EXPECT_THAT(message, ::testing::Not(HasSubstr("config.json")));
    EXPECT_THAT(message, ::testing::Not(HasSubstr("must be even")));
  }
}

TEST(ArtifactReaderTest, MissingArtifactIsNotFound) {
  TempDir dir;
  EXPECT_THAT(ReadArtifactModel(dir.File("none")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(dir.File("none"))));
}

}  // namespace
}  // namespace slimpack::shard_reader
