// Fuzzes tokenizer.json as `slimpack convert --format gguf` reads it
// (gguf_export::ReadTokenizer: vocab, added tokens, merges, the
// pre-tokenizer). The same file is passed as tokenizer_config.json, so its
// add_bos_token and chat_template fields are fuzzed too; config.json and the
// vocabulary size are fixed (the tiny-llama example's ids, 1024 rows). The
// same bytes also go through the SentencePiece tokenizer.model decoder
// (export/sentencepiece_model.h), a protobuf wire reader.
#include <cstddef>
#include <cstdint>
#include <string>

#include "export/gguf_tokenizer.h"
#include "export/sentencepiece_model.h"
#include "fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = slimpack::fuzz::WriteScratchFile("tokenizer.json", data, size);
  slimpack::gguf_export::TokenizerSources sources;
  sources.tokenizer_json = path;
  sources.tokenizer_config_json = path;
  sources.config_json_text = R"({"bos_token_id": 256, "eos_token_id": 257})";
  sources.vocab_size = 1024;
  (void)slimpack::gguf_export::ReadTokenizer(sources);
  (void)slimpack::gguf_export::ParseSentencePieceModel(
      std::string(reinterpret_cast<const char*>(data), size), "tokenizer.model");
  return 0;
}
