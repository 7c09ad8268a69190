// Artifacts of examples/tiny-llama through the CLI commands: an f16
// artifact made by `slimpack convert` evaluates to the PyTorch FP32
// perplexity (expected.json) within 1e-3 relative; checkpoints quantized by
// a naive in-test quantizer (INT8 per-channel symmetric, INT4 group-wise
// asymmetric) evaluate and run from their artifact exactly as the same
// graph with the dequantized f32 weights in memory, and `inspect` lists
// their layouts.
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "eval/perplexity.h"
#include "calibration/token_ids.h"
#include "runtime/interpreter.h"
#include "cli/convert_command.h"
#include "cli/eval_command.h"
#include "cli/exit_codes.h"
#include "cli/inspect_command.h"
#include "cli/run_command.h"
#include "ir/quant.h"
#include "hf/llama_graph_builder.h"
#include "formats/numpy/numpy_io.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "formats/shard/writer/artifact_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::cli {
namespace {

using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::testing::IsOk;
using ::testing::HasSubstr;

const std::string kDir = SLIMPACK_TINY_LLAMA_DIR;

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str(), nullptr, false);
}

// Runs `slimpack eval --json` and returns its JSON (null on failure).
nlohmann::json EvalJson(const std::string& model, const std::string& tokens) {
  EvalOptions o;
  o.model = model;
  o.tokens = tokens;
  o.window = 64;
  o.threads = 2;
  o.json = true;
  ::testing::internal::CaptureStdout();
  const int rc = RunEval(o);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, kExitOk);
  return rc == kExitOk ? nlohmann::json::parse(out, nullptr, false) : nlohmann::json();
}

TEST(ArtifactEvalTest, ConvertedF16ArtifactMatchesPyTorchPerplexity) {
  TempDir dir;
  ConvertOptions c;
  c.input = kDir;
  c.output = dir.File("tiny-f16");
  c.dtype = "f16";
  c.threads = 2;
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(RunConvert(c), kExitOk);
  ::testing::internal::GetCapturedStdout();
  const nlohmann::json expected = ReadJson(kDir + "/expected.json");
  ASSERT_FALSE(expected.is_discarded());
  const double want = expected["eval_set"]["perplexity"].get<double>();
  const nlohmann::json got = EvalJson(c.output, kDir + "/eval_tokens.npy");
  ASSERT_TRUE(got.is_object());
  EXPECT_EQ(got["scored_tokens"], expected["eval_set"]["predicted_tokens"]);
  RecordProperty("f16_artifact_perplexity", std::to_string(got["perplexity"].get<double>()));
  EXPECT_NEAR(got["perplexity"].get<double>(), want, 1e-3 * want);
}

// --- a naive quantizer, written here independently of any pass ----------

bool IsLinearOrEmbedding(ir::WeightRole r) {
  switch (r) {
    case ir::WeightRole::kEmbedding:
    case ir::WeightRole::kQProj:
    case ir::WeightRole::kKProj:
    case ir::WeightRole::kVProj:
    case ir::WeightRole::kOProj:
    case ir::WeightRole::kGateProj:
    case ir::WeightRole::kUpProj:
    case ir::WeightRole::kDownProj:
    case ir::WeightRole::kLmHead:
      return true;
    default:
      return false;
  }
}

ir::Tensor AuxTensor(const ir::Tensor& w, const std::string& suffix, ir::DType dtype,
                     std::vector<int64_t> dims, std::vector<uint8_t> bytes) {
  ir::Tensor t;
  t.name = w.name + suffix;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.layer = w.layer;
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

std::vector<uint8_t> FloatBytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// INT8 per output channel (axis 0), symmetric: s = max|w| / 127.
std::vector<ir::Tensor> QuantizeInt8(const ir::Tensor& w, const float* x) {
  const int64_t rows = w.dims[0], cols = w.dims[1];
  std::vector<float> scale(rows);
  std::vector<uint8_t> q(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    float m = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, std::fabs(x[r * cols + c]));
    scale[r] = m > 0 ? m / 127.0f : 1.0f;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = std::nearbyint(x[r * cols + c] / scale[r]);
      q[r * cols + c] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f)));
    }
  }
  ir::Tensor t = AuxTensor(w, "", ir::DType::kI8, w.dims, std::move(q));
  t.role = w.role;
  t.provenance = w.provenance;
  t.quant.kind = ir::QuantKind::kInt8PerChannel;
  t.quant.axis = 0;
  t.quant.scale = w.name + ".scale";
  t.quant.algorithm = "naive-test";
  return {t, AuxTensor(w, ".scale", ir::DType::kF32, {rows}, FloatBytes(scale))};
}

// INT4 (u4) groups of 16 input features (axis 1), asymmetric min/max.
std::vector<ir::Tensor> QuantizeInt4(const ir::Tensor& w, const float* x) {
  constexpr int64_t kGroup = 16;
  const int64_t rows = w.dims[0], cols = w.dims[1];
  const int64_t groups = (cols + kGroup - 1) / kGroup;
  std::vector<float> scale(rows * groups);
  std::vector<uint8_t> q((rows * cols + 1) / 2, 0), zp((rows * groups + 1) / 2, 0);
  auto put = [](std::vector<uint8_t>& b, int64_t i, int v) {
    b[i / 2] |= static_cast<uint8_t>(v << (i % 2 ? 4 : 0));
  };
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t c0 = g * kGroup, c1 = std::min(cols, c0 + kGroup);
      float lo = 0, hi = 0;
      for (int64_t c = c0; c < c1; ++c) {
        lo = std::min(lo, x[r * cols + c]);
        hi = std::max(hi, x[r * cols + c]);
      }
      const float s = hi > lo ? (hi - lo) / 15.0f : 1.0f;
      const int z = static_cast<int>(std::clamp(std::nearbyint(-lo / s), 0.0f, 15.0f));
      scale[r * groups + g] = s;
      put(zp, r * groups + g, z);
      for (int64_t c = c0; c < c1; ++c) {
        const float v = std::nearbyint(x[r * cols + c] / s) + static_cast<float>(z);
        put(q, r * cols + c, static_cast<int>(std::clamp(v, 0.0f, 15.0f)));
      }
    }
  }
  ir::Tensor t = AuxTensor(w, "", ir::DType::kU4, w.dims, std::move(q));
  t.role = w.role;
  t.provenance = w.provenance;
  t.quant.kind = ir::QuantKind::kInt4GroupWise;
  t.quant.axis = 1;
  t.quant.group_size = kGroup;
  t.quant.scale = w.name + ".scale";
  t.quant.zero_point = w.name + ".zero_point";
  t.quant.algorithm = "naive-test";
  return {t, AuxTensor(w, ".scale", ir::DType::kF32, {rows, groups}, FloatBytes(scale)),
          AuxTensor(w, ".zero_point", ir::DType::kU4, {rows, groups}, std::move(zp))};
}

struct Quantized {
  ir::Model quantized;    // i8/u4 weights with layouts, plus scales/zps
  ir::Model dequantized;  // the same weights as f32 values
  std::vector<std::string> names;  // quantized tensor names
};

Quantized QuantizeCheckpoint(const ir::Model& ckpt, bool int4) {
  Quantized out{ckpt, ckpt, {}};
  out.quantized.graph = ir::Graph();
  out.dequantized.graph = ir::Graph();
  out.quantized.graph.name = out.dequantized.graph.name = ckpt.graph.name;
  for (const ir::Tensor& w : ckpt.graph.initializers()) {
    if (!IsLinearOrEmbedding(w.role) || w.dims.size() != 2 || w.dtype != ir::DType::kF32) {
      EXPECT_THAT(out.quantized.graph.AddInitializer(w), IsOk());
      EXPECT_THAT(out.dequantized.graph.AddInitializer(w), IsOk());
      continue;
    }
    const float* x = reinterpret_cast<const float*>(w.data.data());
    std::vector<ir::Tensor> q = int4 ? QuantizeInt4(w, x) : QuantizeInt8(w, x);
    auto d = ir::DequantizeTensor(q[0], q[1], q.size() > 2 ? &q[2] : nullptr);
    EXPECT_THAT(d, IsOk());
    EXPECT_THAT(out.dequantized.graph.AddInitializer(*d), IsOk());
    out.names.push_back(w.name);
    for (ir::Tensor& t : q) EXPECT_THAT(out.quantized.graph.AddInitializer(std::move(t)), IsOk());
  }
  return out;
}

ir::Tensor I64Tensor(const std::string& name, std::vector<int64_t> dims,
                     const std::vector<int64_t>& v) {
  ir::Tensor t;
  t.name = name;
  t.dtype = ir::DType::kI64;
  t.dims = std::move(dims);
  std::vector<uint8_t> b(v.size() * 8);
  std::memcpy(b.data(), v.data(), b.size());
  t.data = ir::TensorData::Owned(std::move(b));
  return t;
}

class QuantizedArtifactEvalTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    auto ckpt = safetensors::ImportSafetensors(kDir);
    ASSERT_THAT(ckpt, IsOk());
    ckpt_ = *std::move(ckpt);
    auto ids = calibration::LoadTokenIds(kDir + "/eval_tokens.npy");
    ASSERT_THAT(ids, IsOk());
    // 16 windows of 64: enough to compare, small enough for sanitizer runs.
    ASSERT_GE(ids->size(), 16u * 64u);
    ids_.assign(ids->begin(), ids->begin() + 16 * 64);
    ASSERT_THAT(numpy::WriteNpy(dir_.File("tokens.npy"), I64Tensor("t", {16, 64}, ids_)), IsOk());
  }

  // Perplexity and logits of a checkpoint in memory through the builder.
  void InMemory(const ir::Model& ckpt, double* ppl, std::vector<float>* logits) {
    auto model = hf::BuildDecoderGraph(ckpt);
    ASSERT_THAT(model, IsOk());
    runtime::InterpreterOptions o;
    o.num_threads = 2;
    auto interp = runtime::Interpreter::Create(*model, o);
    ASSERT_THAT(interp, IsOk());
    auto r = eval::ComputePerplexity(*interp, ids_, {64, 4});
    ASSERT_THAT(r, IsOk());
    *ppl = r->perplexity;
    if (logits == nullptr) return;
    const std::vector<int64_t> first(ids_.begin(), ids_.begin() + 2 * 64);
    auto out = interp->Run({{hf::kInputIds,
                             runtime::RtTensor::FromVector<int64_t>({2, 64}, first)}});
    ASSERT_THAT(out, IsOk());
    *logits = (*out)[0].ToVector<float>();
  }

  TempDir dir_;
  ir::Model ckpt_;
  std::vector<int64_t> ids_;
};

TEST_P(QuantizedArtifactEvalTest, ArtifactEvalsAndRunsExactlyAsDequantizedWeights) {
  const bool int4 = GetParam();
  Quantized q = QuantizeCheckpoint(ckpt_, int4);
  ASSERT_EQ(q.names.size(), 4u * 7u + 2u);  // 7 linears per layer, embedding, lm_head
  const std::string art = dir_.File(int4 ? "tiny-u4g16" : "tiny-i8");
  ASSERT_THAT(shard_writer::WriteArtifact(q.quantized, art, {}), IsOk());

  double want_ppl = 0, fp32_ppl = 0;
  std::vector<float> want_logits;
  InMemory(q.dequantized, &want_ppl, &want_logits);
  InMemory(ckpt_, &fp32_ppl, nullptr);

  const nlohmann::json got = EvalJson(art, dir_.File("tokens.npy"));
  ASSERT_TRUE(got.is_object());
  // Same graph, same f32 weight values: bit-for-bit the same numbers.
  EXPECT_EQ(got["perplexity"].get<double>(), want_ppl);
  RecordProperty(int4 ? "u4g16_ppl" : "i8_ppl", std::to_string(want_ppl));
  RecordProperty("fp32_ppl", std::to_string(fp32_ppl));
  // And the quantizer is sane: close to FP32 on these 16 windows.
  EXPECT_NEAR(want_ppl, fp32_ppl, (int4 ? 0.03 : 0.005) * fp32_ppl);

  const std::vector<int64_t> first(ids_.begin(), ids_.begin() + 2 * 64);
  ASSERT_THAT(numpy::WriteNpz(dir_.File("in.npz"), {I64Tensor("input_ids", {2, 64}, first)}),
              IsOk());
  RunOptions r{art, dir_.File("in.npz"), dir_.File("out.npz"), 2};
  ASSERT_EQ(RunRun(r), kExitOk);
  auto out = numpy::ReadNpz(dir_.File("out.npz"));
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 1u);
  ASSERT_EQ((*out)[0].data.size(), want_logits.size() * 4);
  EXPECT_EQ(0, std::memcmp((*out)[0].data.data(), want_logits.data(), want_logits.size() * 4));
}

TEST_P(QuantizedArtifactEvalTest, InspectListsEveryQuantizedTensor) {
  const bool int4 = GetParam();
  Quantized q = QuantizeCheckpoint(ckpt_, int4);
  const std::string art = dir_.File("art");
  ASSERT_THAT(shard_writer::WriteArtifact(q.quantized, art, {}), IsOk());

  ::testing::internal::CaptureStdout();
  ASSERT_EQ(RunInspect({art, true}), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(::testing::internal::GetCapturedStdout(),
                                                 nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["by_layout"][int4 ? "int4_groupwise" : "int8_per_channel"], q.names.size());
  ASSERT_EQ(j["quantized_tensors"].size(), q.names.size());
  for (const nlohmann::json& t : j["quantized_tensors"]) {
    const std::string name = t["name"];
    SCOPED_TRACE(name);
    EXPECT_EQ(t["dtype"], int4 ? "u4" : "i8");
    EXPECT_EQ(t["layout"], int4 ? "int4_groupwise" : "int8_per_channel");
    EXPECT_EQ(t["algorithm"], "naive-test");
    EXPECT_EQ(t["bits"], int4 ? 4 : 8);
    EXPECT_EQ(t["symmetric"], !int4);
    EXPECT_EQ(t["group_size"], int4 ? 16 : 0);
    const ir::Tensor* w = ckpt_.graph.FindInitializer(name);
    ASSERT_NE(w, nullptr);
    const double rows = static_cast<double>(w->dims[0]), cols = static_cast<double>(w->dims[1]);
    const double groups = int4 ? std::ceil(cols / 16) : 1;
    // Payload + f32 scales (+ packed u4 zero points), in bits per weight.
    const double bytes = int4 ? std::ceil(rows * cols / 2) + rows * groups * 4 +
                                    std::ceil(rows * groups / 2)
                              : rows * cols + rows * 4;
    EXPECT_DOUBLE_EQ(t["bits_per_weight"].get<double>(), 8 * bytes / (rows * cols));
  }

  ::testing::internal::CaptureStdout();
  ASSERT_EQ(RunInspect({art, false}), kExitOk);
  const std::string text = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(text, HasSubstr("quantized tensors: " + std::to_string(q.names.size())));
  EXPECT_THAT(text, HasSubstr("model.layers.3.mlp.down_proj.weight"));
}

TEST_P(QuantizedArtifactEvalTest, BuilderNamesAWeightWhoseLayoutDisagreesWithItsScale) {
  Quantized q = QuantizeCheckpoint(ckpt_, GetParam());
  const std::string w = "model.layers.1.self_attn.k_proj.weight";
  ir::Tensor* t = q.quantized.graph.FindMutableInitializer(w);
  ASSERT_NE(t, nullptr);
  t->quant.axis = 1 - t->quant.axis;  // the scale no longer has the right shape
  EXPECT_THAT(hf::BuildDecoderGraph(q.quantized),
              ::slimpack::testing::StatusIs(
                  absl::StatusCode::kInvalidArgument,
                  ::testing::AllOf(HasSubstr(kDir), HasSubstr("tensor '" + w + "'"),
                                   HasSubstr("scale tensor '" + w + ".scale' has shape"))));
}

INSTANTIATE_TEST_SUITE_P(Schemes, QuantizedArtifactEvalTest, ::testing::Values(false, true),
                         [](const auto& info) {
                           return std::string(info.param ? "U4Group16" : "I8PerChannel");
                         });

}  // namespace
}  // namespace slimpack::cli
