// tokenizer.json -> GGUF tokenizer metadata: ids, types, merges, the
// pre-tokenizer's llama.cpp name, special ids and the chat template; and the
// tokenizers llama.cpp would read differently, refused by name.
#include "export/gguf_tokenizer.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "formats/gguf/gguf_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf_export {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;
using nlohmann::json;

constexpr char kLlama3Split[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

class GgufTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gguf_tok_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // A byte-level BPE with merges and a llama-3 style split.
  json Tokenizer() {
    json vocab = json::object();
    vocab["a"] = 0;
    vocab["b"] = 1;
    vocab["ab"] = 2;
    vocab["\xC4\xA0"] = 3;  // "Ġ": the byte-level form of a space
    return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a b"})}}},
            {"added_tokens",
             json::array({{{"id", 5}, {"content", "<|end|>"}, {"special", true}},
                          {{"id", 6}, {"content", "<tool>"}, {"special", false}}})},
            {"pre_tokenizer",
             {{"type", "Sequence"},
              {"pretokenizers",
               json::array({{{"type", "Split"},
                             {"pattern", {{"Regex", kLlama3Split}}},
                             {"behavior", "Isolated"}},
                            {{"type", "ByteLevel"}, {"use_regex", false}}})}}}};
  }

  TokenizerSources Sources(const json& tokenizer, int64_t vocab = 8) {
    TokenizerSources s;
    s.tokenizer_json = Write("tokenizer.json", tokenizer.dump());
    s.config_json_text = R"({"bos_token_id": 5, "eos_token_id": 5})";
    s.vocab_size = vocab;
    return s;
  }

  std::string dir_;
};

TEST_F(GgufTokenizerTest, ByteLevelBpeKeepsIdsTypesMergesAndSpecials) {
  TokenizerSources src = Sources(Tokenizer());
  src.tokenizer_config_json =
      Write("tokenizer_config.json",
            R"({"add_bos_token": true, "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"})");
  auto t = ReadTokenizer(src);
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->model, "gpt2");
  EXPECT_EQ(t->pre, "llama-bpe");
  EXPECT_THAT(t->tokens, ElementsAre("a", "b", "ab", "\xC4\xA0", "[PAD4]", "<|end|>", "<tool>", "[PAD7]"));
  EXPECT_THAT(t->token_types, ElementsAre(kNormal, kNormal, kNormal, kNormal, kUnused, kControl,
                                          kUserDefined, kUnused));
  EXPECT_THAT(t->merges, ElementsAre("a b"));
  EXPECT_EQ(t->bos_id, 5);
  EXPECT_EQ(t->eos_id, 5);
  EXPECT_EQ(t->add_bos, 1);
  EXPECT_EQ(t->chat_template, "{% for m in messages %}{{ m.content }}{% endfor %}");
}

TEST_F(GgufTokenizerTest, PairMergesAndGpt2ByteLevelAreRead) {
  json tok = Tokenizer();
  tok["model"]["merges"] = json::array({json::array({"a", "b"})});
  tok["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  auto t = ReadTokenizer(Sources(tok));
  ASSERT_THAT(t, IsOk());
  EXPECT_EQ(t->pre, "gpt-2");
  EXPECT_THAT(t->merges, ElementsAre("a b"));
}

TEST_F(GgufTokenizerTest, TokenizersLlamaCppWouldReadDifferentlyAreRefused) {
  json tok = Tokenizer();
  tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
  EXPECT_THAT(ReadTokenizer(Sources(tok)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("split regex \"\\\\w+\" is not one llama.cpp implements")));

  json no_regex = Tokenizer();
  no_regex["pre_tokenizer"] = {{"type", "ByteLevel"}, {"use_regex", false}};
  EXPECT_THAT(ReadTokenizer(Sources(no_regex)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("without a split regex and with merges")));

  json unigram = Tokenizer();
  unigram["model"]["type"] = "Unigram";
  EXPECT_THAT(ReadTokenizer(Sources(unigram)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model type 'Unigram'")));

  EXPECT_THAT(ReadTokenizer(Sources(Tokenizer(), /*vocab=*/6)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("token id 6 is outside the model's vocabulary of 6 rows")));

  json bad_merge = Tokenizer();
  bad_merge["model"]["merges"] = json::array({7});
  EXPECT_THAT(ReadTokenizer(Sources(bad_merge)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("merge 7 is neither")));
}

// Found by fuzz/tokenizer_fuzz.cc: json::value() threw (terminate) on a
// "type", "name" or "special" of another JSON type, or a pre-tokenizer
// entry that is not an object (fuzz/regressions/tokenizer/).
TEST_F(GgufTokenizerTest, FieldsOfTheWrongJsonTypeAreRefusedNotThrown) {
  json model_type = Tokenizer();
  model_type["model"]["type"] = {{"type", "BPE"}};
  EXPECT_THAT(ReadTokenizer(Sources(model_type)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model type ''")));

  json pre_type = Tokenizer();
  pre_type["pre_tokenizer"]["type"] = 7;
  EXPECT_THAT(ReadTokenizer(Sources(pre_type)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not a byte-level BPE pre-tokenizer")));

  json split_not_object = Tokenizer();
  split_not_object["pre_tokenizer"]["pretokenizers"][0] = 1;
  split_not_object["pre_tokenizer"]["pretokenizers"][1] = "ByteLevel";
  EXPECT_THAT(ReadTokenizer(Sources(split_not_object)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not a byte-level BPE pre-tokenizer")));

  json special = Tokenizer();
  special["added_tokens"][0]["special"] = "yes";
  EXPECT_THAT(ReadTokenizer(Sources(special)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("added token 5 has a non-boolean \"special\": \"yes\"")));

  json named = Tokenizer();
  TokenizerSources src = Sources(named);
  src.tokenizer_config_json =
      Write("tokenizer_config.json", R"({"chat_template": [{"name": 1}, 2, {"name": "default", "template": "t"}]})");
  auto t = ReadTokenizer(src);
  ASSERT_THAT(t.status(), IsOk());
  EXPECT_EQ(t->chat_template, "t");
}

TEST_F(GgufTokenizerTest, MetadataKeysAreWritten) {
  auto t = ReadTokenizer(Sources(Tokenizer()));
  ASSERT_THAT(t, IsOk());
  gguf::GgufWriter writer;
  AddTokenizerMetadata(*t, writer);
  const std::string path = dir_ + "/t.gguf";
  auto written = writer.Write(path);
  ASSERT_THAT(written, IsOk());
  auto file = gguf::OpenGgufFile(path);
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.model")->GetString(), "gpt2");
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.pre")->GetString(), "llama-bpe");
  const gguf::Value* tokens = file->FindValue("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  ASSERT_EQ(tokens->size(), 8u);
  EXPECT_EQ(*tokens->GetString(5), "<|end|>");
  const gguf::Value* types = file->FindValue("tokenizer.ggml.token_type");
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(types->element_type(), gguf::ValueType::kI32);
  ASSERT_EQ(types->size(), 8u);
  EXPECT_EQ(*types->GetInt(5), kControl);
  EXPECT_EQ(*types->GetInt(4), kUnused);
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.merges")->GetString(0), "a b");
  EXPECT_EQ(file->FindValue("tokenizer.ggml.bos_token_id")->type(), gguf::ValueType::kU32);
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.bos_token_id")->GetUInt(), 5u);
  EXPECT_EQ(*file->FindValue("tokenizer.ggml.eos_token_id")->GetUInt(), 5u);
  // Absent in the sources, so absent in the file.
  EXPECT_EQ(file->FindValue("tokenizer.chat_template"), nullptr);
  EXPECT_EQ(file->FindValue("tokenizer.ggml.add_bos_token"), nullptr);
}

}  // namespace
}  // namespace slimpack::gguf_export
