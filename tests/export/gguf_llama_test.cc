// The bundled tiny-llama exported to GGUF and read back with our GGUF
// reader: llama.cpp's tensor names, shapes and rope row order, the
// architecture keys, every value (f32 exactly; q8_0 within half a step), and
// refusals naming what is missing. tests/export/gguf_llama_cpp_test.sh runs
// the files in llama.cpp itself.
#include "export/gguf_llama.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "formats/gguf/ggml_blocks.h"
#include "formats/gguf/gguf_import.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float_convert.h"
#include "ir/quant.h"
#include "quantize/quantize_weights.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf_export {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;

class GgufLlamaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gguf_llama_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto model = safetensors::ImportSafetensors(SLIMPACK_TINY_LLAMA_DIR);
    ASSERT_THAT(model, IsOk());
    model_ = *std::move(model);
    for (const ir::Tensor& t : model_.graph.initializers()) by_name_[t.name] = &t;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::vector<float> Source(const std::string& hf_name) {
    const ir::Tensor& t = *by_name_.at(hf_name);
    const uint64_t n = t.data.size() * 8 / ir::DTypeBits(t.dtype);
    std::vector<float> out(n);
    EXPECT_THAT(ir::ConvertFloats(t.dtype, t.data.data(), ir::DType::kF32,
                                  reinterpret_cast<uint8_t*>(out.data()), n),
                IsOk());
    return out;
  }

  std::vector<float> Decoded(const gguf::TensorInfo& t) {
    std::vector<float> out(t.n_elements);
    EXPECT_THAT(gguf::DequantizeRow(static_cast<gguf::TensorType>(t.type), t.data,
                                    static_cast<int64_t>(t.n_elements), out.data()),
                IsOk());
    return out;
  }

  // Exports the model as f32 GGUF to `path` and returns the file's bytes,
  // for tests that patch one field in place (Patch) and import it back.
  std::string ExportF32(const std::string& path) {
    GgufExportOptions options;
    options.preset = "f32";
    EXPECT_THAT(ExportDecoderToGguf(model_, options, path), IsOk());
    std::ifstream file(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  }
  static void Patch(const std::string& path, size_t at, const void* data, size_t size) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(at));
    file.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  }

  std::string dir_;
  ir::Model model_;
  std::map<std::string, const ir::Tensor*> by_name_;
};

TEST_F(GgufLlamaTest, F32ExportHasLlamaCppNamesShapesAndRopeRowOrder) {
  GgufExportOptions options;
  options.preset = "f32";
  const std::string path = dir_ + "/tiny.gguf";
  auto result = ExportDecoderToGguf(model_, options, path);
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->fallbacks, 0);
  EXPECT_EQ(result->tensors, 2 + 4 * 9 + 1);  // embedding, 4 layers x 9, norm, output
  auto file = gguf::OpenGgufFile(path);
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(file->alignment, 64u);
  for (const gguf::TensorInfo& t : file->tensors) {
    EXPECT_EQ(t.offset % 64, 0u) << t.name;
    EXPECT_EQ(t.type, static_cast<uint32_t>(gguf::TensorType::kF32)) << t.name;
  }
  EXPECT_EQ(file->tensors.front().name, "token_embd.weight");
  EXPECT_EQ(file->tensors.back().name, "output.weight");
  EXPECT_EQ(*file->FindValue("general.architecture")->GetString(), "llama");
  EXPECT_EQ(*file->FindValue("llama.block_count")->GetUInt(), 4u);
  EXPECT_EQ(*file->FindValue("llama.attention.head_count")->GetUInt(), 4u);
  EXPECT_EQ(*file->FindValue("llama.attention.head_count_kv")->GetUInt(), 2u);
  EXPECT_EQ(*file->FindValue("llama.feed_forward_length")->GetUInt(), 344u);
  EXPECT_EQ(*file->FindValue("llama.rope.dimension_count")->GetUInt(), 32u);
  EXPECT_NEAR(*file->FindValue("llama.attention.layer_norm_rms_epsilon")->GetFloat(), 1e-5, 1e-12);
  EXPECT_EQ(file->FindValue("tokenizer.ggml.tokens")->size(), 258u);
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.bos_token_id")->GetUInt(), 256u);

  // Unpermuted tensors are the source values exactly.
  const gguf::TensorInfo* down = file->FindTensor("blk.2.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->ne, (std::vector<int64_t>{344, 128}));
  EXPECT_EQ(Decoded(*down), Source("model.layers.2.mlp.down_proj.weight"));

  // attn_q/attn_k: head h's row 2j+t is HF row t*(d/2)+j of that head
  // (convert_hf_to_gguf.py's permute), written out for d = 32.
  for (const auto& [gguf_name, hf_name, heads] :
       {std::tuple<std::string, std::string, int64_t>{"blk.1.attn_q.weight",
                                                      "model.layers.1.self_attn.q_proj.weight", 4},
        {"blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight", 2}}) {
    const gguf::TensorInfo* t = file->FindTensor(gguf_name);
    ASSERT_NE(t, nullptr) << gguf_name;
    const std::vector<float> got = Decoded(*t), want = Source(hf_name);
    const int64_t cols = 128, rows = heads * 32;
    ASSERT_EQ(static_cast<int64_t>(got.size()), rows * cols);
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t j = 0; j < 16; ++j) {
        for (int64_t half = 0; half < 2; ++half) {
          const int64_t dst = h * 32 + 2 * j + half, src = h * 32 + half * 16 + j;
          ASSERT_EQ(std::memcmp(&got[dst * cols], &want[src * cols], cols * sizeof(float)), 0)
              << gguf_name << " row " << dst;
        }
      }
    }
  }
}

TEST_F(GgufLlamaTest, Q8ExportIsWithinHalfAStepOfEveryWeight) {
  GgufExportOptions options;
  options.preset = "q8_0";
  options.threads = 3;
  const std::string path = dir_ + "/q8.gguf";
  auto result = ExportDecoderToGguf(model_, options, path);
  ASSERT_THAT(result, IsOk());
  // ffn_down rows (344) divide no block: f16, as llama-quantize falls back.
  EXPECT_EQ(result->fallbacks, 4);
  auto file = gguf::OpenGgufFile(path);
  ASSERT_THAT(file, IsOk());
  const gguf::TensorInfo* up = file->FindTensor("blk.0.ffn_up.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->type, static_cast<uint32_t>(gguf::TensorType::kQ8_0));
  const std::vector<float> got = Decoded(*up), want = Source("model.layers.0.mlp.up_proj.weight");
  for (size_t b = 0; b < want.size(); b += 32) {
    float amax = 0;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(want[i]));
    // d = amax/127 stored as f16 (relative error <= 2^-11), codes rounded.
    const float bound = amax / 127.0f * (0.5f + 127.0f / 2048.0f) + 1e-12f;
    for (size_t i = b; i < b + 32; ++i) ASSERT_LE(std::fabs(got[i] - want[i]), bound) << i;
  }
  EXPECT_EQ(file->FindTensor("blk.0.ffn_down.weight")->type,
            static_cast<uint32_t>(gguf::TensorType::kF16));

  // The same export on one thread gives the same bytes.
  options.threads = 1;
  const std::string again = dir_ + "/q8_1thread.gguf";
  ASSERT_THAT(ExportDecoderToGguf(model_, options, again), IsOk());
  EXPECT_EQ(std::system(("cmp -s " + path + " " + again).c_str()), 0);
}

TEST_F(GgufLlamaTest, F32ExportImportsBackToTheCheckpointExactly) {
  // q/k biases too (attention_bias checkpoints): permuted as vectors on the
  // way out, un-permuted on the way in.
  for (const char* proj : {"q", "k"}) {
    const ir::Tensor* w = by_name_.at(absl::StrCat("model.layers.1.self_attn.", proj, "_proj.weight"));
    ir::Tensor bias;
    bias.name = absl::StrCat("model.layers.1.self_attn.", proj, "_proj.bias");
    bias.dtype = ir::DType::kF32;
    bias.dims = {w->dims[0]};
    std::vector<float> values(w->dims[0]);
    for (size_t i = 0; i < values.size(); ++i) values[i] = 0.001f * static_cast<float>(i);
    std::vector<uint8_t> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    bias.data = ir::TensorData::Owned(std::move(bytes));
    bias.role = ir::WeightRole::kBias;
    bias.layer = 1;
    ASSERT_THAT(model_.graph.AddInitializer(std::move(bias)), IsOk());
  }
  for (const ir::Tensor& t : model_.graph.initializers()) by_name_[t.name] = &t;
  // The biases exist only when config.json says so (otherwise refused).
  std::string& config = model_.architecture->config_json;
  const std::string no_bias = "\"attention_bias\": false";
  const size_t at = config.find(no_bias);
  ASSERT_NE(at, std::string::npos);
  config.replace(at, no_bias.size(), "\"attention_bias\": true");
  GgufExportOptions options;
  options.preset = "f32";
  const std::string path = dir_ + "/roundtrip.gguf";
  ASSERT_THAT(ExportDecoderToGguf(model_, options, path), IsOk());
  auto back = gguf::ImportGguf(path);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->source_format, ir::SourceFormat::kGguf);
  ASSERT_TRUE(back->architecture.has_value());
  EXPECT_EQ(back->architecture->num_kv_heads, 2);
  EXPECT_EQ(back->architecture->head_dim, 32);
  ASSERT_EQ(back->graph.initializers().size(), model_.graph.initializers().size());
  for (const ir::Tensor& t : back->graph.initializers()) {
    ASSERT_TRUE(by_name_.count(t.name)) << t.name;
    EXPECT_EQ(t.dims, by_name_.at(t.name)->dims) << t.name;
    const uint64_t n = t.data.size() / 4;
    std::vector<float> got(n);
    std::memcpy(got.data(), t.data.data(), t.data.size());
    EXPECT_EQ(got, Source(t.name)) << t.name;
    EXPECT_EQ(t.role, by_name_.at(t.name)->role) << t.name;
  }
}

// Rotary q/k rows permuted in ggml blocks: a block-typed q weight keeps its
// blocks (whole rows move), a block-typed q/k bias (rank 1, permuted
// element by element) is decoded on import and re-encoded, not carried, on
// export; both come back as the values the blocks hold.
TEST_F(GgufLlamaTest, BlockTypedRopeWeightsAndBiasesRoundTrip) {
  ir::Model model = model_;
  std::vector<ir::Tensor> tensors(model.graph.initializers().begin(),
                                  model.graph.initializers().end());
  const std::string qw = "model.layers.1.self_attn.q_proj.weight";
  const std::string qb = "model.layers.1.self_attn.q_proj.bias";
  std::string& config = model.architecture->config_json;
  const std::string no_bias = "\"attention_bias\": false";
  config.replace(config.find(no_bias), no_bias.size(), "\"attention_bias\": true");
  auto encode = [](const ir::Tensor& f32, int64_t rows, int64_t cols) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    std::memcpy(v.data(), f32.data.data(), v.size() * 4);
    std::vector<uint8_t> bytes(static_cast<size_t>(gguf::RowBytes(gguf::TensorType::kQ8_0, cols) * rows));
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_THAT(gguf::QuantizeRow(gguf::TensorType::kQ8_0, v.data() + r * cols, cols, nullptr,
                                    bytes.data() + r * gguf::RowBytes(gguf::TensorType::kQ8_0, cols)),
                  IsOk());
    }
    ir::Tensor t = f32;
    t.dtype = ir::DType::kU8;
    t.data = ir::TensorData::Owned(std::move(bytes));
    t.quant.kind = ir::QuantKind::kGgmlBlocks;
    t.quant.block_type = ir::GgmlType::kQ8_0;
    t.quant.axis = static_cast<int>(t.dims.size()) - 1;
    t.quant.group_size = 32;
    return t;
  };
  ir::Graph g;
  g.name = model.graph.name;
  for (const ir::Tensor& t : tensors) {
    if (t.name == qw) {
      ASSERT_THAT(g.AddInitializer(encode(t, t.dims[0], t.dims[1])), IsOk());
      ir::Tensor bias;
      bias.name = qb;
      bias.dtype = ir::DType::kF32;
      bias.dims = {t.dims[0]};
      std::vector<float> values(t.dims[0]);
      for (size_t i = 0; i < values.size(); ++i) values[i] = 0.01f * static_cast<float>(i % 37);
      bias.data = ir::TensorData::Owned(std::vector<uint8_t>(
          reinterpret_cast<uint8_t*>(values.data()),
          reinterpret_cast<uint8_t*>(values.data()) + values.size() * 4));
      bias.role = ir::WeightRole::kBias;
      bias.layer = 1;
      ASSERT_THAT(g.AddInitializer(encode(bias, 1, bias.dims[0])), IsOk());
    } else {
      ASSERT_THAT(g.AddInitializer(t), IsOk());
    }
  }
  model.graph = std::move(g);
  auto decoded = [](const ir::Tensor& t) {
    auto v = ir::DequantizeToF32(t, nullptr, nullptr);
    EXPECT_THAT(v, IsOk());
    return v.ok() ? *v : std::vector<float>{};
  };
  const std::vector<float> want_w = decoded(*model.graph.FindInitializer(qw));
  const std::vector<float> want_b = decoded(*model.graph.FindInitializer(qb));

  GgufExportOptions options;
  options.preset = "f32";
  const std::string path = dir_ + "/rope_blocks.gguf";
  auto result = ExportDecoderToGguf(model, options, path);
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->carried, 1);  // the weight; the bias is re-encoded (as f32)
  auto file = gguf::OpenGgufFile(path);
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(file->FindTensor("blk.1.attn_q.weight")->type,
            static_cast<uint32_t>(gguf::TensorType::kQ8_0));
  EXPECT_EQ(file->FindTensor("blk.1.attn_q.bias")->type,
            static_cast<uint32_t>(gguf::TensorType::kF32));

  // A GGUF whose q bias is itself q8_0 blocks: write one from the f32 file.
  gguf::GgufWriter writer;
  for (const gguf::KeyValue& kv : file->metadata) {
    writer.AddEncoded(std::string(kv.key), kv.value.type(), kv.value.Encoded());
  }
  for (const gguf::TensorInfo& t : file->tensors) {
    const bool bias = t.name == "blk.1.attn_q.bias";
    const auto type = bias ? gguf::TensorType::kQ8_0 : static_cast<gguf::TensorType>(t.type);
    ASSERT_THAT(writer.AddTensor(std::string(t.name), t.ne, type,
                                 [&t, bias](uint8_t* dst, uint64_t size) -> absl::Status {
                                   if (!bias) {
                                     std::memcpy(dst, t.data, size);
                                     return absl::OkStatus();
                                   }
                                   std::vector<float> v(t.n_elements);
                                   std::memcpy(v.data(), t.data, v.size() * 4);
                                   return gguf::QuantizeRow(gguf::TensorType::kQ8_0, v.data(),
                                                            static_cast<int64_t>(v.size()),
                                                            nullptr, dst);
                                 }),
                IsOk());
  }
  const std::string q8_bias = dir_ + "/q8_bias.gguf";
  ASSERT_THAT(writer.Write(q8_bias), IsOk());
  auto back = gguf::ImportGguf(q8_bias);
  ASSERT_THAT(back, IsOk());
  const ir::Tensor* w = back->graph.FindInitializer(qw);
  const ir::Tensor* b = back->graph.FindInitializer(qb);
  ASSERT_NE(w, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(w->quant.kind, ir::QuantKind::kGgmlBlocks);  // rows moved, blocks kept
  EXPECT_EQ(decoded(*w), want_w);
  EXPECT_FALSE(b->quant.quantized());  // decoded: its elements moved one by one
  std::vector<float> got_b(b->data.size() / 4);
  std::memcpy(got_b.data(), b->data.data(), b->data.size());
  // q8_0 of values already on a q8_0 grid (the f32 file holds them) is the
  // same grid again.
  EXPECT_EQ(got_b, want_b);
}

TEST_F(GgufLlamaTest, ImportRefusesAnEmptyTensorByName) {
  const std::string path = dir_ + "/empty.gguf";
  const std::string bytes = ExportF32(path);
  // output.weight is the last tensor: zeroing its ne[0] keeps every offset
  // valid (the reader accepts empty tensors, as llama.cpp's does).
  const std::string name = "output.weight";
  const size_t at = bytes.rfind(name);
  ASSERT_NE(at, std::string::npos);
  const uint64_t zero = 0;
  Patch(path, at + name.size() + 4, &zero, 8);  // after n_dims
  EXPECT_THAT(gguf::ImportGguf(path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'output.weight' has no elements")));
}

// Found by fuzz_gguf (fuzz/regressions/gguf/block_count_huge.gguf): a
// block_count of 2^26 over four layers sized a per-layer table of 1.6 GB.
TEST_F(GgufLlamaTest, ABlockCountBeyondTheFilesLayersIsRefusedBeforeAllocating) {
  const std::string path = dir_ + "/layers.gguf";
  const std::string bytes = ExportF32(path);
  const std::string key = "llama.block_count";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  uint32_t type = 0, value = 0;
  std::memcpy(&type, &bytes[at + key.size()], 4);
  std::memcpy(&value, &bytes[at + key.size() + 4], 4);
  ASSERT_EQ(type, 4u);  // GGUF_TYPE_UINT32
  ASSERT_EQ(value, 4u);
  const uint32_t huge = 1u << 26;
  Patch(path, at + key.size() + 4, &huge, 4);
  EXPECT_THAT(gguf::ImportGguf(path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metadata 'llama.block_count' is 67108864 but no tensor is "
                                 "named 'blk.4.*'")));
}

// llama-quantize's own job, a float GGUF in and a quantized one out: the
// f32 GGUF of the checkpoint re-encoded gives the very file the checkpoint
// gives (weights decoded exactly, the tokenizer keys and general.name
// copied as they were, the architecture keys written anew).
TEST_F(GgufLlamaTest, AFloatGgufReEncodesToTheFileTheCheckpointGives) {
  const std::string f32 = dir_ + "/f32.gguf";
  ExportF32(f32);
  auto imported = gguf::ImportGguf(f32);
  ASSERT_THAT(imported, IsOk());
  for (const char* preset : {"f16", "q8_0", "q4_k_m"}) {
    GgufExportOptions options;
    options.preset = preset;
    const std::string direct = dir_ + "/direct.gguf", again = dir_ + "/again.gguf";
    ASSERT_THAT(ExportDecoderToGguf(model_, options, direct), IsOk());
    ASSERT_THAT(ExportDecoderToGguf(*imported, options, again), IsOk());
    auto read = [](const std::string& path) {
      std::ifstream file(path, std::ios::binary);
      return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    };
    const std::string a = read(direct), b = read(again);
    EXPECT_GT(a.size(), 100000u) << preset;
    EXPECT_TRUE(a == b) << preset << ": " << a.size() << " vs " << b.size() << " bytes";
  }
}

// A float GGUF keeps its dtype and bytes: f16 / bf16 matrices view the
// file's mapping (rotary q/k rows, which move, are copied in their own
// dtype), hold the checkpoint's values rounded once, and export back to
// the very same file.
TEST_F(GgufLlamaTest, F16AndBf16GgufsKeepTheirBytesAndExportBackToTheSameFile) {
  auto read = [](const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  };
  for (const std::string preset : {"f16", "bf16"}) {
    const ir::DType want = preset == "f16" ? ir::DType::kF16 : ir::DType::kBF16;
    GgufExportOptions options;
    options.preset = preset;
    const std::string path = dir_ + "/" + preset + ".gguf";
    ASSERT_THAT(ExportDecoderToGguf(model_, options, path), IsOk());
    auto back = gguf::ImportGguf(path);
    ASSERT_THAT(back, IsOk());
    int matrices = 0, viewed = 0;
    for (const ir::Tensor& t : back->graph.initializers()) {
      if (t.dims.size() != 2) continue;
      ++matrices;
      EXPECT_EQ(t.dtype, want) << preset << " " << t.name;
      const bool rope = t.name.find("q_proj") != std::string::npos ||
                        t.name.find("k_proj") != std::string::npos;
      EXPECT_EQ(t.data.is_view(), !rope) << preset << " " << t.name;
      viewed += t.data.is_view();
      const std::vector<float> src = Source(t.name);
      ASSERT_EQ(t.data.size(), src.size() * 2) << t.name;
      for (size_t i = 0; i < src.size(); ++i) {
        uint16_t bits;
        std::memcpy(&bits, t.data.data() + 2 * i, 2);
        const uint16_t rounded = want == ir::DType::kF16 ? ir::F32ToF16(src[i])
                                                         : ir::F32ToBf16(src[i]);
        ASSERT_EQ(bits, rounded) << preset << " " << t.name << "[" << i << "]";
      }
    }
    EXPECT_EQ(matrices, 4 * 7 + 2);  // 7 projections a layer, embedding, lm_head
    EXPECT_EQ(viewed, matrices - 4 * 2);
    const std::string again = dir_ + "/" + preset + "-again.gguf";
    ASSERT_THAT(ExportDecoderToGguf(*back, options, again), IsOk());
    EXPECT_TRUE(read(path) == read(again)) << preset;
  }
}

TEST_F(GgufLlamaTest, AQuantizedOrTokenizerlessGgufIsNotReEncoded) {
  GgufExportOptions q8;
  q8.preset = "q8_0";
  const std::string q8_path = dir_ + "/q8.gguf";
  ASSERT_THAT(ExportDecoderToGguf(model_, q8, q8_path), IsOk());
  auto q8_model = gguf::ImportGguf(q8_path);
  ASSERT_THAT(q8_model, IsOk());
  GgufExportOptions q4;
  q4.preset = "q4_0";
  EXPECT_THAT(ExportDecoderToGguf(*q8_model, q4, dir_ + "/q4.gguf").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("' is stored as q8_0; re-encoding a quantized GGUF would round "
                                 "its weights twice")));
  EXPECT_NE(::access((dir_ + "/q4.gguf").c_str(), F_OK), 0);

  // The tokenizer's model key renamed in place: nothing to copy.
  const std::string path = dir_ + "/f32.gguf";
  const std::string bytes = ExportF32(path);
  const std::string key = "tokenizer.ggml.model";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  Patch(path, at + key.size() - 1, "X", 1);
  auto no_tokenizer = gguf::ImportGguf(path);
  ASSERT_THAT(no_tokenizer, IsOk());
  EXPECT_THAT(ExportDecoderToGguf(*no_tokenizer, q4, dir_ + "/q4.gguf").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no tokenizer.ggml.model: the GGUF carries no tokenizer")));
}

TEST_F(GgufLlamaTest, MissingTokenizerOrOutputIsRefusedByName) {
  ir::Model no_tokenizer = model_;
  no_tokenizer.carried_files.clear();
  EXPECT_THAT(ExportDecoderToGguf(no_tokenizer, {}, dir_ + "/a.gguf").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no tokenizer.json")));

  ir::Model no_head = model_;
  ASSERT_TRUE(no_head.graph.RemoveInitializer("lm_head.weight"));
  EXPECT_THAT(ExportDecoderToGguf(no_head, {}, dir_ + "/b.gguf").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lm_head.weight is missing")));
  EXPECT_NE(::access((dir_ + "/b.gguf").c_str(), F_OK), 0);
}

// An artifact's integer codes go to GGUF as they are where a ggml type
// holds the layout: each element ggml decodes is the artifact's code times
// the f16-rounded scale (plus the f16 min for Q4_1), the codes untouched;
// the layouts no ggml type holds (rows of 344 are not blocks of 32) are
// dequantized and quantized again, and counted. tests/export/
// gguf_llama_cpp_test.sh runs such files in llama.cpp.
TEST_F(GgufLlamaTest, QuantizedArtifactCodesAreCarriedIntoGgmlBlocks) {
  struct Case {
    const char* scheme;
    gguf::TensorType type;
  };
  for (const Case& c : {Case{"int4-g32", gguf::TensorType::kQ4_0},
                        Case{"int4-g32-asym", gguf::TensorType::kQ4_1},
                        Case{"int8", gguf::TensorType::kQ8_0},
                        Case{"int8-g32", gguf::TensorType::kQ8_0}}) {
    SCOPED_TRACE(c.scheme);
    ir::Model m = model_;
    quantize::QuantizeRequest req;
    req.config.scheme = *quantize::ParseWeightScheme(c.scheme);
    ASSERT_THAT(quantize::QuantizeWeights(m, req), IsOk());
    GgufExportOptions options;
    options.preset = "f16";
    const std::string path = dir_ + "/" + c.scheme + ".gguf";
    auto done = ExportDecoderToGguf(m, options, path);
    ASSERT_THAT(done, IsOk());
    // Every matrix but the 4 ffn_down, whose rows of 344 are not blocks of 32.
    EXPECT_EQ(done->carried, 26);
    EXPECT_EQ(done->requantized, 4);
    EXPECT_LT(done->max_requantized_rel_l2, 1e-3);  // into f16
    auto file = gguf::OpenGgufFile(path);
    ASSERT_THAT(file, IsOk());
    const ir::Tensor& q = *m.graph.FindInitializer("model.layers.1.self_attn.v_proj.weight");
    const ir::Tensor& s = *m.graph.FindInitializer(q.quant.scale);
    const ir::Tensor* z = q.quant.zero_point.empty() ? nullptr : m.graph.FindInitializer(q.quant.zero_point);
    const gguf::TensorInfo* t = file->FindTensor("blk.1.attn_v.weight");
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(static_cast<gguf::TensorType>(t->type), c.type);
    const std::vector<float> got = Decoded(*t);
    const int64_t cols = q.dims[1];
    ASSERT_EQ(got.size(), static_cast<size_t>(q.dims[0] * cols));
    auto scales = ir::ScaleValues(s);
    ASSERT_THAT(scales, IsOk());
    auto scale_at = [&](int64_t i) { return (*scales)[static_cast<size_t>(i)]; };
    auto f16 = [](float v) { return ir::F16ToF32(ir::F32ToF16(v)); };
    const bool per_row = q.quant.kind == ir::QuantKind::kInt8PerChannel;
    int64_t mismatches = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i) {
      const int64_t row = i / cols, group = row * (cols / 32) + (i % cols) / 32;
      float want;
      if (c.type == gguf::TensorType::kQ8_0) {
        want = static_cast<float>(ir::IntAt<ir::DType::kI8>(q.data.data(), i)) *
               f16(scale_at(per_row ? row : group));
      } else if (c.type == gguf::TensorType::kQ4_0) {
        want = static_cast<float>(ir::IntAt<ir::DType::kI4>(q.data.data(), i)) * f16(scale_at(group));
      } else {
        const int32_t zp = ir::IntAt<ir::DType::kU4>(z->data.data(), group);
        want = static_cast<float>(ir::IntAt<ir::DType::kU4>(q.data.data(), i)) * f16(scale_at(group)) +
               f16(-static_cast<float>(zp) * scale_at(group));
      }
      mismatches += got[i] != want;
    }
    EXPECT_EQ(mismatches, 0);
  }
}

// An act-order weight (codes stored with permuted input columns, read
// through Gather(x, perm)) goes to GGUF with its columns back in checkpoint
// order: f32 holds exactly the dequantized codes, column perm[j] of the
// GGUF row equal to stored column j. tests/export/gguf_llama_cpp_test.sh
// runs an act-order GPTQ checkpoint's GGUF in llama.cpp.
TEST_F(GgufLlamaTest, AnActOrderWeightGoesOutInCheckpointColumnOrder) {
  ir::Model m = model_;
  quantize::QuantizeRequest req;
  req.config.scheme = *quantize::ParseWeightScheme("int4-g32");
  ASSERT_THAT(quantize::QuantizeWeights(m, req), IsOk());
  const std::string weight = "model.layers.0.mlp.up_proj.weight";
  auto add_perm = [&m, &weight](const std::vector<int64_t>& perm) {
    ir::Tensor t;
    t.name = weight + ".input_perm";
    t.dtype = ir::DType::kI64;
    t.dims = {static_cast<int64_t>(perm.size())};
    std::vector<uint8_t> bytes(perm.size() * 8);
    std::memcpy(bytes.data(), perm.data(), bytes.size());
    t.data = ir::TensorData::Owned(std::move(bytes));
    m.graph.RemoveInitializer(t.name);
    return m.graph.AddInitializer(std::move(t));
  };
  // A permutation that moves every column: j -> (37 j + 5) mod 128.
  std::vector<int64_t> perm(128);
  for (int64_t j = 0; j < 128; ++j) perm[j] = (37 * j + 5) % 128;
  ASSERT_THAT(add_perm(perm), IsOk());
  GgufExportOptions options;
  options.preset = "f32";
  std::vector<std::string> log;
  options.log = [&log](const std::string& line) { log.push_back(line); };
  const std::string path = dir_ + "/perm.gguf";
  ASSERT_THAT(ExportDecoderToGguf(m, options, path), IsOk());
  auto file = gguf::OpenGgufFile(path);
  ASSERT_THAT(file, IsOk());
  const gguf::TensorInfo* up = file->FindTensor("blk.0.ffn_up.weight");
  ASSERT_NE(up, nullptr);
  const std::vector<float> got = Decoded(*up);
  const ir::Tensor& w = *m.graph.FindInitializer(weight);
  auto stored = ir::DequantizeToF32(w, *m.graph.FindInitializer(w.quant.scale),
                                    w.quant.zero_point.empty()
                                        ? nullptr
                                        : m.graph.FindInitializer(w.quant.zero_point));
  ASSERT_THAT(stored, IsOk());
  ASSERT_EQ(got.size(), stored->size());
  int64_t moved = 0;
  for (int64_t r = 0; r < 344; ++r) {
    for (int64_t j = 0; j < 128; ++j) {
      ASSERT_EQ(got[r * 128 + perm[j]], (*stored)[r * 128 + j]) << r << "," << j;
      moved += got[r * 128 + j] != (*stored)[r * 128 + j];
    }
  }
  EXPECT_GT(moved, 344 * 100);  // the order really changed
  EXPECT_THAT(log, ::testing::Contains(HasSubstr(
                       "blk.0.ffn_up.weight [128, 344] f32 (act-order codes: columns put back")));

  perm[7] = perm[8];
  ASSERT_THAT(add_perm(perm), IsOk());
  EXPECT_THAT(ExportDecoderToGguf(m, options, dir_ + "/bad.gguf").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input permutation 'model.layers.0.mlp.up_proj.weight.input_perm'"
                                 ": element 8 = ")));
  EXPECT_NE(::access((dir_ + "/bad.gguf").c_str(), F_OK), 0);
}

// Per-layer widths go out as llama.cpp's "deci"; tests/export/
// gguf_llama_cpp_test.sh runs such a file in llama.cpp. Here: what is
// refused, on the way out and on the way in.
TEST_F(GgufLlamaTest, PerLayerWidthsOfAQwen2AreRefusedNamingTheArchitecture) {
  ir::Model m = model_;
  m.architecture->model_type = "qwen2";
  std::string& config = m.architecture->config_json;
  config.insert(config.rfind('}'), ",\n  \"intermediate_size_per_layer\": [344, 300, 344, 344]\n");
  EXPECT_THAT(ExportDecoderToGguf(m, {}, dir_ + "/q.gguf").status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("qwen2 model whose layers were pruned to different widths")));
  EXPECT_NE(::access((dir_ + "/q.gguf").c_str(), F_OK), 0);
}

TEST_F(GgufLlamaTest, ADeciWidthListOfTheWrongLengthIsNamed) {
  gguf::GgufWriter w;
  w.AddString("general.architecture", "deci");
  w.AddU32("deci.embedding_length", 128);
  w.AddU32("deci.block_count", 2);
  w.AddI32Array("deci.feed_forward_length", {344, 200, 100});
  const std::string path = dir_ + "/deci.gguf";
  ASSERT_THAT(w.Write(path).status(), IsOk());
  EXPECT_THAT(gguf::ImportGguf(path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'deci.feed_forward_length' has 3 values; block_count is 2")));
}

}  // namespace
}  // namespace slimpack::gguf_export
