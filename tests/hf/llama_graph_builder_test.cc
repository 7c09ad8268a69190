// The built decoder graph, run by the reference interpreter, against a naive
// double-precision forward pass: llama with GQA, qwen2 with q/k/v biases,
// tied embeddings, mistral with head_dim != hidden/heads, and the same with
// a KV cache driven step by step (left padding included); plus structure
// (zero-copy weights, provenance) and error cases, sizes from config.json or
// a manifest checked before anything is allocated from them.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "runtime/interpreter.h"
#include "ir/verifier.h"
#include "hf/llama_graph_builder.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/hf/naive_decoder.h"
#include "tests/hf/tiny_checkpoint.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::hf {
namespace {

using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::TinyDecoder;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using testing::ByName;
using testing::NaiveDecoderLogits;
using testing::RandomDecoderTensors;
using testing::WriteCheckpoint;

struct Case {
  const char* label;
  TinyDecoder decoder;
  ir::DType dtype;
};

TinyDecoder Decoder(const std::string& type, int64_t hidden, int64_t heads, int64_t kv,
                    int64_t head_dim, bool biases, bool tie) {
  TinyDecoder d;
  d.model_type = type;
  d.layers = 2;
  d.hidden = hidden;
  d.heads = heads;
  d.kv_heads = kv;
  d.head_dim = head_dim;
  d.intermediate = 24;
  d.vocab = 40;
  d.biases = biases;
  d.tie = tie;
  return d;
}

class DecoderGraphTest : public ::testing::TestWithParam<Case> {};

TEST_P(DecoderGraphTest, MatchesNaiveForwardPass) {
  const Case& c = GetParam();
  TempDir dir;
  const std::vector<ir::Tensor> tensors = RandomDecoderTensors(c.decoder, c.dtype, 17);
  WriteCheckpoint(dir.path(), c.decoder, tensors);
  auto ckpt = safetensors::ImportSafetensors(dir.path());
  ASSERT_THAT(ckpt, IsOk());
  auto model = BuildDecoderGraph(*ckpt);
  ASSERT_THAT(model, IsOk());
  ASSERT_THAT(ir::VerifyModel(*model), IsOk());

  const int64_t batch = 2, seq = 7;
  std::vector<int64_t> ids(batch * seq);
  std::mt19937 rng(5);
  for (int64_t& id : ids) id = static_cast<int64_t>(rng() % c.decoder.vocab);
  runtime::InterpreterOptions options;
  options.num_threads = 2;
  auto interp = runtime::Interpreter::Create(*model, options);
  ASSERT_THAT(interp, IsOk());
  auto out = interp->Run({{kInputIds, runtime::RtTensor::FromVector<int64_t>({batch, seq}, ids)}});
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 1u);
  const runtime::RtTensor& logits = (*out)[0];
  ASSERT_EQ(logits.dims(), (std::vector<int64_t>{batch, seq, c.decoder.vocab}));

  const std::vector<double> want =
      NaiveDecoderLogits(*ckpt->architecture, ByName(tensors), ids, batch, seq);
  const std::vector<float> got = logits.ToVector<float>();
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(got[i]) - want[i]));
    max_abs = std::max(max_abs, std::abs(want[i]));
  }
  RecordProperty("max_abs_logit_diff", std::to_string(max_diff));
  EXPECT_LE(max_diff, 1e-4) << "max |logit| " << max_abs;
  EXPECT_GT(max_abs, 0.1);  // the comparison is not between near-zero values
}

// The graph with a KV cache, driven as ONNX Runtime GenAI drives it: a
// 4-token prompt with an empty past, then 3 steps of one token each, every
// step's present.* fed back as past_key_values.*. Row 0 is 7 real tokens;
// row 1 is left-padded by 2 (attention_mask 0, position_ids counting real
// tokens), so its real positions must match the naive pass over its 5
// tokens alone.
TEST_P(DecoderGraphTest, KvCacheStepsMatchNaiveForwardPass) {
  const Case& c = GetParam();
  TempDir dir;
  const std::vector<ir::Tensor> tensors = RandomDecoderTensors(c.decoder, c.dtype, 17);
  WriteCheckpoint(dir.path(), c.decoder, tensors);
  auto ckpt = safetensors::ImportSafetensors(dir.path());
  ASSERT_THAT(ckpt, IsOk());
  DecoderGraphOptions graph_options;
  graph_options.kv_cache = true;
  auto model = BuildDecoderGraph(*ckpt, graph_options);
  ASSERT_THAT(model, IsOk());
  ASSERT_THAT(ir::VerifyModel(*model), IsOk());
  const int64_t layers = c.decoder.layers, vocab = c.decoder.vocab;
  ASSERT_EQ(model->graph.inputs.size(), 3u + 2 * layers);
  ASSERT_EQ(model->graph.outputs.size(), 1u + 2 * layers);
  EXPECT_EQ(model->graph.inputs[1].name, kAttentionMask);
  EXPECT_EQ(model->graph.inputs[2].name, kPositionIds);
  EXPECT_EQ(model->graph.inputs[3].name, "past_key_values.0.key");
  EXPECT_EQ(model->graph.outputs[2 * layers].name, PresentName(layers - 1, false));

  const int64_t seq = 7, pad = 2, prompt = 4;
  std::vector<int64_t> ids(2 * seq);
  std::mt19937 rng(5);
  for (int64_t& id : ids) id = static_cast<int64_t>(rng() % vocab);
  const std::vector<int64_t> mask = {1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1};
  const std::vector<int64_t> positions = {0, 1, 2, 3, 4, 5, 6, 0, 0, 0, 1, 2, 3, 4};
  runtime::InterpreterOptions options;
  options.num_threads = 2;
  auto interp = runtime::Interpreter::Create(*model, options);
  ASSERT_THAT(interp, IsOk());
  std::vector<runtime::RtTensor> past;
  for (int64_t l = 0; l < 2 * layers; ++l) {
    past.push_back(runtime::RtTensor::FromVector<float>(
        {2, c.decoder.kv_heads, 0, c.decoder.head_dim}, {}));
  }
  std::vector<float> got(2 * seq * vocab);  // [2, seq, vocab] over the steps
  for (int64_t start = 0; start < seq;) {
    const int64_t n = start == 0 ? prompt : 1;
    std::vector<int64_t> step_ids, step_pos, step_mask;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t j = 0; j < start + n; ++j) step_mask.push_back(mask[b * seq + j]);
      for (int64_t j = start; j < start + n; ++j) {
        step_ids.push_back(ids[b * seq + j]);
        step_pos.push_back(positions[b * seq + j]);
      }
    }
    std::map<std::string, runtime::RtTensor> feeds = {
        {kInputIds, runtime::RtTensor::FromVector<int64_t>({2, n}, step_ids)},
        {kAttentionMask, runtime::RtTensor::FromVector<int64_t>({2, start + n}, step_mask)},
        {kPositionIds, runtime::RtTensor::FromVector<int64_t>({2, n}, step_pos)}};
    for (int64_t l = 0; l < layers; ++l) {
      feeds[PastName(l, true)] = past[2 * l];
      feeds[PastName(l, false)] = past[2 * l + 1];
    }
    auto out = interp->Run(feeds);
    ASSERT_THAT(out, IsOk()) << "step at " << start;
    ASSERT_EQ(out->size(), 1u + 2 * layers);
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, n, vocab}));
    const std::vector<float> logits = (*out)[0].ToVector<float>();
    for (int64_t b = 0; b < 2; ++b) {
      std::copy(logits.begin() + b * n * vocab, logits.begin() + (b + 1) * n * vocab,
                got.begin() + (b * seq + start) * vocab);
    }
    for (int64_t i = 0; i < 2 * layers; ++i) {
      past[i] = (*out)[1 + i];
      ASSERT_EQ(past[i].dims(), (std::vector<int64_t>{2, c.decoder.kv_heads, start + n,
                                                      c.decoder.head_dim}));
    }
    start += n;
  }

  const std::map<std::string, ir::Tensor> weights = ByName(tensors);
  const std::vector<int64_t> row0(ids.begin(), ids.begin() + seq);
  const std::vector<int64_t> row1(ids.begin() + seq + pad, ids.end());
  const std::vector<double> want0 = NaiveDecoderLogits(*ckpt->architecture, weights, row0, 1, seq);
  const std::vector<double> want1 =
      NaiveDecoderLogits(*ckpt->architecture, weights, row1, 1, seq - pad);
  double max_diff = 0, max_abs = 0;
  auto compare = [&](const std::vector<double>& want, int64_t got_offset) {
    for (size_t i = 0; i < want.size(); ++i) {
      max_diff = std::max(max_diff, std::abs(static_cast<double>(got[got_offset + i]) - want[i]));
      max_abs = std::max(max_abs, std::abs(want[i]));
    }
  };
  compare(want0, 0);
  compare(want1, (seq + pad) * vocab);
  RecordProperty("max_abs_logit_diff", std::to_string(max_diff));
  EXPECT_LE(max_diff, 1e-4) << "max |logit| " << max_abs;
  EXPECT_GT(max_abs, 0.1);
}

INSTANTIATE_TEST_SUITE_P(
    Families, DecoderGraphTest,
    ::testing::Values(
        Case{"llama_gqa", Decoder("llama", 16, 4, 2, 4, false, false), ir::DType::kF32},
        Case{"llama_bf16", Decoder("llama", 16, 4, 2, 4, false, false), ir::DType::kBF16},
        Case{"qwen2_biases", Decoder("qwen2", 16, 4, 1, 4, true, false), ir::DType::kF32},
        Case{"tied_embeddings", Decoder("llama", 16, 2, 2, 8, false, true), ir::DType::kF32},
        Case{"mistral_wide_heads", Decoder("mistral", 16, 4, 2, 8, false, false),
             ir::DType::kF32}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.label); });

class DecoderGraphStructureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tensors_ = RandomDecoderTensors(decoder_, ir::DType::kF32, 3);
    WriteCheckpoint(dir_.path(), decoder_, tensors_);
  }
  TempDir dir_;
  TinyDecoder decoder_ = Decoder("llama", 16, 4, 2, 4, false, false);
  std::vector<ir::Tensor> tensors_;
};

TEST_F(DecoderGraphStructureTest, SharesWeightBytesAndNamesHfModulesInProvenance) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  auto model = BuildDecoderGraph(*ckpt);
  ASSERT_THAT(model, IsOk());
  for (const ir::Tensor& w : ckpt->graph.initializers()) {
    const ir::Tensor* used = model->graph.FindInitializer(w.name);
    ASSERT_NE(used, nullptr) << w.name;
    EXPECT_EQ(used->data.data(), w.data.data()) << w.name << " was copied";
  }
  bool saw_q_proj = false;
  for (const ir::Node& n : model->graph.nodes) {
    ASSERT_FALSE(n.provenance.source_nodes.empty()) << n.name;
    if (n.op_type == "Gemm" && n.inputs[1] == "model.layers.1.self_attn.q_proj.weight") {
      EXPECT_EQ(n.provenance.ToString(), "model.layers.1.self_attn.q_proj");
      saw_q_proj = true;
    }
  }
  EXPECT_TRUE(saw_q_proj);
  EXPECT_EQ(model->graph.outputs[0].name, kLogits);
  EXPECT_EQ(model->opset_imports.at(""), 17);
}

// --onnx-gqa's graph: per layer one com.microsoft.GroupQueryAttention that
// writes the layer's present.* outputs, reads its past.* inputs and takes the
// plain graph's mask as attention_bias (input 10); no plain attention left.
// ONNX Runtime runs it against `slimpack run` in onnx_ort_kvcache (this
// interpreter has no GroupQueryAttention kernel).
TEST(DecoderGraphGqaTest, OneGroupQueryAttentionPerLayer) {
  TempDir dir;
  const TinyDecoder d = Decoder("llama", 32, 4, 2, 8, false, false);
  WriteCheckpoint(dir.path(), d, RandomDecoderTensors(d, ir::DType::kF32, 3));
  auto ckpt = safetensors::ImportSafetensors(dir.path());
  ASSERT_THAT(ckpt, IsOk());
  DecoderGraphOptions options;
  options.kv_cache = true;
  options.group_query_attention = true;
  auto model = BuildDecoderGraph(*ckpt, options);
  ASSERT_THAT(model, IsOk());
  std::vector<const ir::Node*> gqa;
  std::string mask;
  for (const ir::Node& n : model->graph.nodes) {
    EXPECT_NE(n.op_type, "Softmax") << n.name;
    EXPECT_NE(n.op_type, "MatMul") << n.name;
    if (n.op_type == "GroupQueryAttention") gqa.push_back(&n);
  }
  ASSERT_EQ(gqa.size(), 2u);
  EXPECT_EQ(model->opset_imports.at("com.microsoft"), 1);
  for (int64_t l = 0; l < 2; ++l) {
    const ir::Node& n = *gqa[l];
    EXPECT_EQ(n.domain, "com.microsoft");
    EXPECT_EQ(n.IntAttrOr("num_heads", 0), 4);
    EXPECT_EQ(n.IntAttrOr("kv_num_heads", 0), 2);
    ASSERT_EQ(n.inputs.size(), 11u);
    EXPECT_EQ(n.inputs[3], PastName(l, true));
    EXPECT_EQ(n.inputs[4], PastName(l, false));
    EXPECT_EQ(n.inputs[7], "");
    EXPECT_FALSE(n.inputs[10].empty());
    if (l == 0) mask = n.inputs[10];
    EXPECT_EQ(n.inputs[10], mask) << "every layer reads the one mask";
    EXPECT_EQ(n.outputs, (std::vector<std::string>{n.outputs[0], PresentName(l, true),
                                                   PresentName(l, false)}));
    EXPECT_EQ(n.provenance.ToString(), "model.layers." + std::to_string(l) + ".self_attn");
  }
  // The inputs and outputs are the plain KV-cache graph's, name for name.
  DecoderGraphOptions plain_options;
  plain_options.kv_cache = true;
  auto plain = BuildDecoderGraph(*ckpt, plain_options);
  ASSERT_THAT(plain, IsOk());
  ASSERT_EQ(model->graph.inputs.size(), plain->graph.inputs.size());
  for (size_t i = 0; i < plain->graph.inputs.size(); ++i) {
    EXPECT_EQ(model->graph.inputs[i].name, plain->graph.inputs[i].name);
  }
  ASSERT_EQ(model->graph.outputs.size(), plain->graph.outputs.size());
  for (size_t i = 0; i < plain->graph.outputs.size(); ++i) {
    EXPECT_EQ(model->graph.outputs[i].name, plain->graph.outputs[i].name);
  }
}

TEST_F(DecoderGraphStructureTest, GroupQueryAttentionRefusals) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  DecoderGraphOptions options;
  options.group_query_attention = true;
  EXPECT_THAT(BuildDecoderGraph(*ckpt, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs the cache inputs")));
  options.kv_cache = true;  // decoder_'s head_dim is 4
  EXPECT_THAT(BuildDecoderGraph(*ckpt, options),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("head_dim 4 (config.json) is not a multiple of 8")));
}

TEST_F(DecoderGraphStructureTest, MissingWeightIsNotFoundNamingIt) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  ASSERT_TRUE(ckpt->graph.RemoveInitializer("model.layers.1.mlp.up_proj.weight"));
  EXPECT_THAT(BuildDecoderGraph(*ckpt),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("lacks weight 'model.layers.1.mlp.up_proj.weight'")));
}

TEST_F(DecoderGraphStructureTest, UnsupportedArchitectureIsNamed) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  ckpt->architecture->model_type = "gpt2";
  EXPECT_THAT(BuildDecoderGraph(*ckpt),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("model_type 'gpt2' has no graph builder (supported: llama, "
                                 "mistral, qwen2)")));
  ckpt->architecture.reset();
  EXPECT_THAT(BuildDecoderGraph(*ckpt), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                 HasSubstr("config.json")));
}

TEST_F(DecoderGraphStructureTest, WrongShapeNamesWeightAndBothShapes) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  ckpt->architecture->intermediate_size = 32;
  EXPECT_THAT(BuildDecoderGraph(*ckpt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'model.layers.0.mlp.gate_proj.weight' has shape [24,16], "
                                 "config.json implies [32,16]")));
}

// Sizes are checked against their bounds and the weights before anything
// is allocated from them (head_dim 2^40 used to reach a head_dim-long
// vector: std::bad_alloc, or an abort under ASan, so a Status back shows no
// allocation was tried). Each message names the field as the source spells
// it, the value, and the source; a bad value is never called "(must be
// even)" unless oddness is the problem.
TEST_F(DecoderGraphStructureTest, BadSizesNameSourceFieldAndValue) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  ASSERT_THAT(BuildDecoderGraph(*ckpt), IsOk());
  using Arch = ir::ArchitectureInfo;
  struct Edit {
    int64_t Arch::*field;
    int64_t value;
    const char* config_says;    // from config.json: HF field names
    const char* manifest_says;  // from an artifact manifest: its names
  };
  // The fixture: 2 layers, 4 heads (2 KV) of head_dim 4, hidden 16, vocab 40.
  const Edit edits[] = {
      {&Arch::head_dim, int64_t{1} << 40,
       "field 'head_dim' must be a positive integer up to 1073741824, found 1099511627776",
       "field 'head_dim' must be a positive integer up to 1073741824, found 1099511627776"},
      {&Arch::head_dim, 7, "field 'head_dim' must be even", "field 'head_dim' must be even"},
      {&Arch::head_dim, 8,
       "field 'head_dim' (8) times 'num_attention_heads' (4) = 32 rows does not match weight "
       "'model.layers.0.self_attn.q_proj.weight' [16,16]",
       "field 'head_dim' (8) times 'num_heads' (4) = 32 rows"},
      {&Arch::num_heads, 0,
       "field 'num_attention_heads' must be a positive integer up to 1073741824, found 0",
       "field 'num_heads' must be a positive integer up to 1073741824, found 0"},
      {&Arch::num_kv_heads, 3,
       "field 'num_attention_heads' (4) must be a multiple of 'num_key_value_heads' (3)",
       "field 'num_heads' (4) must be a multiple of 'num_kv_heads' (3)"},
      {&Arch::num_layers, int64_t{1} << 40,
       "field 'num_hidden_layers' must be a positive integer up to 1073741824",
       "field 'num_layers' must be a positive integer up to 1073741824"},
      {&Arch::num_layers, 3, "field 'num_hidden_layers' (3) exceeds the layers",
       "field 'num_layers' (3) exceeds the layers"},
      {&Arch::vocab_size, 41, "field 'vocab_size' (41) does not match the embedding",
       "field 'vocab_size' (41) does not match the embedding"},
      {&Arch::max_position_embeddings, int64_t{1} << 31,
       "field 'max_position_embeddings' must be a positive integer up to 1073741824",
       "field 'max_position_embeddings' must be a positive integer up to 1073741824"},
  };
  for (const Edit& e : edits) {
    for (const Arch::Source source : {Arch::Source::kConfigJson, Arch::Source::kManifest}) {
      const bool manifest = source == Arch::Source::kManifest;
      SCOPED_TRACE(std::to_string(e.value) + (manifest ? " in a manifest" : " in config.json"));
      ir::Model m = *ckpt;
      (*m.architecture).*e.field = e.value;
      m.architecture->source = source;
      const std::string where =
          dir_.path() + (manifest ? ": manifest.json architecture " : ": config.json ");
      auto built = BuildDecoderGraph(m);
      ASSERT_THAT(built, StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr(where + (manifest ? e.manifest_says : e.config_says))));
      const std::string message(built.status().message());
      if (manifest) {
        EXPECT_THAT(message, ::testing::Not(HasSubstr("config.json")));
      }
      if (e.value != 7) {
        EXPECT_THAT(message, ::testing::Not(HasSubstr("must be even")));
      }
    }
  }
}

TEST_F(DecoderGraphStructureTest, UnimplementedConfigOptionsFailAndSlidingWindowWarns) {
  auto ckpt = safetensors::ImportSafetensors(dir_.path());
  ASSERT_THAT(ckpt, IsOk());
  const std::string config = ckpt->architecture->config_json;
  ASSERT_EQ(config.back(), '}');
  auto with = [&](const std::string& extra) {
    ir::Model m = *ckpt;
    m.architecture->config_json = config.substr(0, config.size() - 1) + ", " + extra + "}";
    return m;
  };
  EXPECT_THAT(BuildDecoderGraph(with(R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})")),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("rope_scaling (type 'llama3')")));
  EXPECT_THAT(BuildDecoderGraph(with(R"("hidden_act": "gelu")")),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("hidden_act \"gelu\"")));
  EXPECT_THAT(BuildDecoderGraph(with(R"("mlp_bias": true)")),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("mlp_bias")));
  EXPECT_THAT(BuildDecoderGraph(with(R"("rope_scaling": null, "hidden_act": "silu")")), IsOk());
  ir::Model mistral = with(R"("sliding_window": 4096)");
  mistral.architecture->model_type = "mistral";
  auto built = BuildDecoderGraph(mistral);
  ASSERT_THAT(built, IsOk());
  EXPECT_THAT(built->warnings, ::testing::Contains(HasSubstr("sliding_window 4096 is not applied")));
}

}  // namespace
}  // namespace slimpack::hf
