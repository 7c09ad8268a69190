// SentencePiece's tokenizer.model (a serialized sentencepiece.ModelProto) as
// far as a GGUF "llama" tokenizer needs it: the pieces with their scores and
// types, the model type, byte fallback, the special ids and the normalizer
// options that change how text is split. Read with a bounded protobuf wire
// decoder of its own (no sentencepiece or protobuf runtime): every length
// is checked against the bytes left, unknown fields are skipped by wire
// type, and anything malformed is refused naming the file and the offset.
#ifndef SLIMPACK_EXPORT_SENTENCEPIECE_MODEL_H_
#define SLIMPACK_EXPORT_SENTENCEPIECE_MODEL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace slimpack::gguf_export {

struct SentencePiece {
  std::string piece;
  float score = 0.0f;
  // sentencepiece.ModelProto.SentencePiece.Type: NORMAL 1, UNKNOWN 2,
  // CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6 (the values GGUF stores).
  int32_t type = 1;
};

struct SentencePieceModel {
  std::vector<SentencePiece> pieces;  // id order
  // TrainerSpec (proto defaults when absent).
  int32_t model_type = 1;  // UNIGRAM 1, BPE 2, WORD 3, CHAR 4
  bool byte_fallback = false;
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
  // NormalizerSpec (proto defaults when absent).
  std::string normalizer_name;
  uint64_t precompiled_charsmap_bytes = 0;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Parses `bytes`, the contents of `path` (named in errors, with the byte
// offset of the fault). InvalidArgument for a truncated or malformed
// message, a piece type outside 1..6, no pieces, or more than `max_pieces`
// (the model's embedding rows; checked as they are read, so a file of
// millions of tiny pieces costs no more memory than the vocabulary it is
// exported with).
absl::StatusOr<SentencePieceModel> ParseSentencePieceModel(std::string_view bytes,
                                                           const std::string& path,
                                                           size_t max_pieces = size_t{1} << 30);

// Reads and parses the file (at most 64 MiB).
absl::StatusOr<SentencePieceModel> ReadSentencePieceModel(const std::string& path,
                                                          size_t max_pieces = size_t{1} << 30);

}  // namespace slimpack::gguf_export

#endif  // SLIMPACK_EXPORT_SENTENCEPIECE_MODEL_H_
