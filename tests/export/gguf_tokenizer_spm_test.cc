// SentencePiece tokenizer.model -> GGUF "llama" tokenizer metadata: the
// committed Llama-2-style fixture (tests/testdata/tokenizer_spm, made by
// scripts/fixtures/make_spm_tokenizer.py; the figures below are what
// SentencePiece itself reports for it), models llama.cpp would split
// differently refused by field, and malformed protobuf refused by offset.
// llama.cpp tokenizing with the exported file is gguf_llama_cpp_test.sh's.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "export/gguf_tokenizer.h"
#include "export/sentencepiece_model.h"
#include "formats/gguf/gguf_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf_export {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;

const std::string kFixture = std::string(SLIMPACK_SOURCE_DIR) + "/tests/testdata/tokenizer_spm";

// Protobuf wire encoding, to build models field by field.
std::string Varint(uint64_t v) {
  std::string out;
  do {
    out.push_back(static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
    v >>= 7;
  } while (v != 0);
  return out;
}
std::string Field(uint32_t number, const std::string& bytes) {
  return Varint(uint64_t{number} << 3 | 2) + Varint(bytes.size()) + bytes;
}
std::string VarintField(uint32_t number, uint64_t v) { return Varint(uint64_t{number} << 3) + Varint(v); }
std::string Piece(const std::string& text, float score, int type) {
  std::string fixed(4, '\0');
  std::memcpy(fixed.data(), &score, 4);
  return Field(1, Field(1, text) + Varint(2 << 3 | 5) + fixed + VarintField(3, type));
}

// A BPE model llama.cpp reproduces: <unk> <s> </s>, two byte pieces, "▁a".
struct ModelFields {
  int model_type = 2;
  bool byte_fallback = true;
  std::string charsmap;
  bool remove_extra_whitespaces = false;
  int piece_type = 1;
};
std::string Model(const ModelFields& f) {
  std::string m = Piece("<unk>", 0, 2) + Piece("<s>", 0, 3) + Piece("</s>", 0, 3) +
                  Piece("<0x00>", 0, 6) + Piece("<0x01>", 0, 6) +
                  Piece("\xe2\x96\x81" "a", -1.5f, f.piece_type);
  m += Field(2, VarintField(3, f.model_type) + VarintField(35, f.byte_fallback));
  std::string norm = Field(1, f.charsmap.empty() ? "identity" : "nmt_nfkc");
  if (!f.charsmap.empty()) norm += Field(2, f.charsmap);
  norm += VarintField(4, f.remove_extra_whitespaces);
  return m + Field(3, norm);
}

class GgufTokenizerSpmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gguf_spm_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  TokenizerSources Sources(const std::string& model_path, int64_t vocab) {
    TokenizerSources s;
    s.tokenizer_model = model_path;
    s.config_json_text = R"({"bos_token_id": 1, "eos_token_id": 2})";
    s.vocab_size = vocab;
    return s;
  }
  absl::Status Read(const ModelFields& f) {
    return ReadTokenizer(Sources(Write("tokenizer.model", Model(f)), 8)).status();
  }

  std::string dir_;
};

TEST_F(GgufTokenizerSpmTest, TheFixtureParsesAsSentencePieceReportsIt) {
  auto m = ReadSentencePieceModel(kFixture + "/tokenizer.model");
  ASSERT_THAT(m, IsOk());
  ASSERT_EQ(m->pieces.size(), 700u);
  EXPECT_EQ(m->pieces[0].piece, "<unk>");
  EXPECT_EQ(m->pieces[0].type, 2);
  EXPECT_EQ(m->pieces[1].piece, "<s>");
  EXPECT_EQ(m->pieces[1].type, 3);
  EXPECT_EQ(m->pieces[3].piece, "<0x00>");
  EXPECT_EQ(m->pieces[258].piece, "<0xFF>");
  EXPECT_EQ(m->pieces[258].type, 6);
  EXPECT_EQ(m->pieces[260].piece, "\xe2\x96\x81t");
  EXPECT_EQ(m->pieces[260].score, -1.0f);
  EXPECT_EQ(m->pieces[699].piece, "\xf0\x9f\x9a\x80");  // the rocket emoji
  EXPECT_EQ(m->pieces[699].score, -440.0f);
  EXPECT_EQ(m->model_type, 2);
  EXPECT_TRUE(m->byte_fallback);
  EXPECT_EQ(m->unk_id, 0);
  EXPECT_EQ(m->bos_id, 1);
  EXPECT_EQ(m->eos_id, 2);
  EXPECT_EQ(m->pad_id, -1);
  EXPECT_EQ(m->normalizer_name, "identity");
  EXPECT_EQ(m->precompiled_charsmap_bytes, 0u);
  EXPECT_TRUE(m->add_dummy_prefix);
  EXPECT_FALSE(m->remove_extra_whitespaces);
}

TEST_F(GgufTokenizerSpmTest, ExportedAsLlamaCppsConverterLaysItOut) {
  TokenizerSources src = Sources(kFixture + "/tokenizer.model", 704);
  src.tokenizer_config_json = kFixture + "/tokenizer_config.json";
  // tokenizer.model wins over a tokenizer.json (llama.cpp's order).
  src.tokenizer_json = Write("tokenizer.json", "not read");
  auto t = ReadTokenizer(src);
  ASSERT_THAT(t, IsOk());
  gguf::GgufWriter writer;
  AddTokenizerMetadata(*t, writer);
  const std::string path = dir_ + "/t.gguf";
  ASSERT_THAT(writer.Write(path), IsOk());
  auto file = gguf::OpenGgufFile(path);
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.model")->GetString(), "llama");
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.pre")->GetString(), "default");
  const gguf::Value* tokens = file->FindValue("tokenizer.ggml.tokens");
  const gguf::Value* scores = file->FindValue("tokenizer.ggml.scores");
  const gguf::Value* types = file->FindValue("tokenizer.ggml.token_type");
  ASSERT_NE(tokens, nullptr);
  ASSERT_NE(scores, nullptr);
  ASSERT_NE(types, nullptr);
  ASSERT_EQ(tokens->size(), 704u);
  ASSERT_EQ(scores->size(), 704u);
  ASSERT_EQ(types->size(), 704u);
  EXPECT_EQ(scores->element_type(), gguf::ValueType::kF32);
  // added_tokens_decoder marks <unk> <s> </s> special: control, -1000.
  for (int id : {0, 1, 2}) {
    EXPECT_EQ(*types->GetInt(id), kControl) << id;
    EXPECT_EQ(*scores->GetFloat(id), -1000.0) << id;
  }
  EXPECT_EQ(*tokens->GetString(3), "<0x00>");
  EXPECT_EQ(*types->GetInt(3), kByte);
  EXPECT_EQ(*tokens->GetString(260), "\xe2\x96\x81t");
  EXPECT_EQ(*types->GetInt(260), kNormal);
  EXPECT_EQ(*scores->GetFloat(699), -440.0);
  // Rows beyond the pieces: unused padding.
  EXPECT_EQ(*tokens->GetString(700), "[PAD700]");
  EXPECT_EQ(*types->GetInt(703), kUnused);
  EXPECT_EQ(*scores->GetFloat(703), -10000.0);
  EXPECT_EQ(file->FindValue("tokenizer.ggml.merges"), nullptr);
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.unknown_token_id")->GetUInt(), 0u);
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.bos_token_id")->GetUInt(), 1u);
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.eos_token_id")->GetUInt(), 2u);
  EXPECT_EQ(file->FindValue("tokenizer.ggml.padding_token_id"), nullptr);
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.add_bos_token")->GetBool(), true);
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.add_space_prefix")->GetBool(), true);
  EXPECT_THAT(std::string(*file->FindValue("tokenizer.chat_template")->GetString()),
              HasSubstr("m['role']"));
}

TEST_F(GgufTokenizerSpmTest, ModelsLlamaCppWouldSplitDifferentlyAreRefusedByField) {
  ASSERT_THAT(Read({}), IsOk());
  ModelFields unigram;
  unigram.model_type = 1;
  EXPECT_THAT(Read(unigram), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("trainer_spec.model_type is 1 (UNIGRAM)")));
  ModelFields no_bytes;
  no_bytes.byte_fallback = false;
  EXPECT_THAT(Read(no_bytes), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("trainer_spec.byte_fallback is false")));
  ModelFields nfkc;
  nfkc.charsmap = std::string(40, 'x');
  EXPECT_THAT(Read(nfkc), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("normalizer_spec.name is 'nmt_nfkc' with 40 bytes")));
  ModelFields squeeze;
  squeeze.remove_extra_whitespaces = true;
  EXPECT_THAT(Read(squeeze),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("normalizer_spec.remove_extra_whitespaces is true")));
  EXPECT_THAT(ReadTokenizer(Sources(Write("tokenizer.model", Model({})), 5)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("more pieces than the model's 5 embedding rows")));
  // The bound is applied while reading: the sixth piece is refused by offset.
  EXPECT_THAT(ParseSentencePieceModel(Model({}), "m", 5).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("m: more pieces than the model's 5 embedding rows (config.json "
                                 "vocab_size); piece 5 starts at byte ")));
}

TEST_F(GgufTokenizerSpmTest, MalformedProtobufIsRefusedWithTheOffset) {
  const std::string good = Model({});
  const std::string path = dir_ + "/m";
  // Cut anywhere inside the first piece: a length or varint past the end.
  for (size_t cut : {1u, 2u, 5u}) {
    EXPECT_THAT(ParseSentencePieceModel(good.substr(0, cut), path).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("runs past the end")))
        << cut;
  }
  EXPECT_THAT(ParseSentencePieceModel("", path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no pieces")));
  // Wire type 3 (a group start): for pieces, and for an unknown field 9.
  EXPECT_THAT(ParseSentencePieceModel(std::string("\x0b", 1) + good, path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at byte 1: pieces has wire type 3, expected 2")));
  EXPECT_THAT(ParseSentencePieceModel(std::string("\x4b", 1) + good, path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at byte 1: wire type 3 (groups")));
  // pieces sent as a varint.
  EXPECT_THAT(ParseSentencePieceModel(VarintField(1, 5), path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pieces has wire type 0, expected 2")));
  ModelFields bad_type;
  bad_type.piece_type = 9;
  EXPECT_THAT(ParseSentencePieceModel(Model(bad_type), path).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("piece 5 has type 9")));
  // An eleven-byte varint in an unknown field 9.
  EXPECT_THAT(ParseSentencePieceModel(std::string("\x48") + std::string(10, '\xff') + "\x01", path)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("longer than 10 bytes")));
  // Unknown fields of every wire type are skipped.
  const std::string fixed64 = Varint(9 << 3 | 1) + std::string(8, '\0');
  const std::string fixed32 = Varint(10 << 3 | 5) + std::string(4, '\0');
  EXPECT_THAT(ParseSentencePieceModel(fixed64 + fixed32 + VarintField(11, 300) + good, path),
              IsOk());
}

}  // namespace
}  // namespace slimpack::gguf_export
