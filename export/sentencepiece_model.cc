#include "export/sentencepiece_model.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "support/small_file.h"
#include "support/status_macros.h"

namespace slimpack::gguf_export {
namespace {

// Llama 3's 128k-piece model is 2 MB; 64 MiB leaves room for any real one.
constexpr uint64_t kMaxModelBytes = uint64_t{64} << 20;
// More pieces than a GGUF token id (int32) can name is not a tokenizer.
constexpr size_t kMaxPieces = size_t{1} << 30;

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// One protobuf message's bytes, read field by field. `base` is the offset of
// data[0] in the file, for errors.
class WireReader {
 public:
  WireReader(std::string_view data, uint64_t base, const std::string& path)
      : data_(data), base_(base), path_(path) {}

  bool done() const { return at_ == data_.size(); }

  // The next field's number and wire type.
  absl::Status Tag(uint32_t& field, uint32_t& wire) {
    const uint64_t start = Offset();
    uint64_t key = 0;
    RETURN_IF_ERROR(Varint(key));
    field = static_cast<uint32_t>(key >> 3);
    wire = static_cast<uint32_t>(key & 7);
    if (field == 0 || key >> 3 > 0x1fffffff) return Bad(start, absl::StrCat("field number ", key >> 3));
    return absl::OkStatus();
  }

  absl::Status Varint(uint64_t& v) {
    const uint64_t start = Offset();
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ == data_.size()) return Bad(start, "varint runs past the end of its message");
      const uint8_t b = static_cast<uint8_t>(data_[at_++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return absl::OkStatus();
    }
    return Bad(start, "varint longer than 10 bytes");
  }

  absl::Status Fixed32(uint32_t& v) {
    if (data_.size() - at_ < 4) return Bad(Offset(), "fixed32 runs past the end of its message");
    unsigned char b[4];
    std::memcpy(b, data_.data() + at_, 4);
    v = uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
    at_ += 4;
    return absl::OkStatus();
  }

  // A length-delimited field's bytes; `offset` gets their file offset.
  absl::Status Bytes(std::string_view& out, uint64_t& offset) {
    const uint64_t start = Offset();
    uint64_t len = 0;
    RETURN_IF_ERROR(Varint(len));
    if (len > data_.size() - at_) {
      return Bad(start, absl::StrCat("length ", len, " runs past the end of its message (",
                                     data_.size() - at_, " bytes left)"));
    }
    offset = Offset();
    out = data_.substr(at_, len);
    at_ += len;
    return absl::OkStatus();
  }

  absl::Status Skip(uint32_t wire) {
    uint64_t v = 0;
    uint32_t f32 = 0;
    std::string_view bytes;
    switch (wire) {
      case kVarint: return Varint(v);
      case kFixed32: return Fixed32(f32);
      case kLengthDelimited: return Bytes(bytes, v);
      case kFixed64:
        if (data_.size() - at_ < 8) return Bad(Offset(), "fixed64 runs past the end of its message");
        at_ += 8;
        return absl::OkStatus();
      default:
        return Bad(Offset(), absl::StrCat("wire type ", wire, " (groups and types above 5 are not "
                                          "protobuf 3)"));
    }
  }

  // A field of the expected wire type, or an error naming it.
  absl::Status Expect(uint32_t wire, uint32_t want, const char* field) {
    if (wire == want) return absl::OkStatus();
    return Bad(Offset(), absl::StrCat(field, " has wire type ", wire, ", expected ", want));
  }

  absl::Status Bad(uint64_t offset, const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": not a SentencePiece model: at byte ", base_ + offset, ": ", what));
  }

  uint64_t Offset() const { return at_; }
  uint64_t base() const { return base_; }

 private:
  std::string_view data_;
  uint64_t base_;
  size_t at_ = 0;
  const std::string& path_;
};

// Calls `field(reader, number, wire)` for every field of the message; the
// callback must consume the field's value (Skip for unknown ones).
absl::Status ForEachField(WireReader& r,
                          const std::function<absl::Status(WireReader&, uint32_t, uint32_t)>& field) {
  while (!r.done()) {
    uint32_t number = 0, wire = 0;
    RETURN_IF_ERROR(r.Tag(number, wire));
    RETURN_IF_ERROR(field(r, number, wire));
  }
  return absl::OkStatus();
}

absl::Status VarintInt32(WireReader& r, uint32_t wire, const char* name, int32_t& out) {
  RETURN_IF_ERROR(r.Expect(wire, kVarint, name));
  uint64_t v = 0;
  RETURN_IF_ERROR(r.Varint(v));
  // int32 fields hold negatives sign-extended to 64 bits.
  out = static_cast<int32_t>(static_cast<uint32_t>(v));
  return absl::OkStatus();
}

absl::Status VarintBool(WireReader& r, uint32_t wire, const char* name, bool& out) {
  RETURN_IF_ERROR(r.Expect(wire, kVarint, name));
  uint64_t v = 0;
  RETURN_IF_ERROR(r.Varint(v));
  out = v != 0;
  return absl::OkStatus();
}

absl::Status ParsePiece(std::string_view bytes, uint64_t base, const std::string& path,
                        size_t index, SentencePiece& out) {
  WireReader r(bytes, base, path);
  return ForEachField(r, [&](WireReader& r, uint32_t field, uint32_t wire) -> absl::Status {
    uint64_t offset = 0;
    std::string_view text;
    uint32_t bits = 0;
    switch (field) {
      case 1:
        RETURN_IF_ERROR(r.Expect(wire, kLengthDelimited, "piece"));
        RETURN_IF_ERROR(r.Bytes(text, offset));
        out.piece.assign(text);
        return absl::OkStatus();
      case 2:
        RETURN_IF_ERROR(r.Expect(wire, kFixed32, "score"));
        RETURN_IF_ERROR(r.Fixed32(bits));
        std::memcpy(&out.score, &bits, sizeof bits);
        return absl::OkStatus();
      case 3: {
        const uint64_t at = r.Offset();
        RETURN_IF_ERROR(VarintInt32(r, wire, "type", out.type));
        if (out.type < 1 || out.type > 6) {
          return r.Bad(at, absl::StrCat("piece ", index, " has type ", out.type,
                                        " (NORMAL 1 ... BYTE 6)"));
        }
        return absl::OkStatus();
      }
      default:
        return r.Skip(wire);
    }
  });
}

absl::Status ParseTrainerSpec(std::string_view bytes, uint64_t base, const std::string& path,
                              SentencePieceModel& m) {
  WireReader r(bytes, base, path);
  return ForEachField(r, [&](WireReader& r, uint32_t field, uint32_t wire) -> absl::Status {
    switch (field) {
      case 3: return VarintInt32(r, wire, "trainer_spec.model_type", m.model_type);
      case 35: return VarintBool(r, wire, "trainer_spec.byte_fallback", m.byte_fallback);
      case 40: return VarintInt32(r, wire, "trainer_spec.unk_id", m.unk_id);
      case 41: return VarintInt32(r, wire, "trainer_spec.bos_id", m.bos_id);
      case 42: return VarintInt32(r, wire, "trainer_spec.eos_id", m.eos_id);
      case 43: return VarintInt32(r, wire, "trainer_spec.pad_id", m.pad_id);
      default: return r.Skip(wire);
    }
  });
}

absl::Status ParseNormalizerSpec(std::string_view bytes, uint64_t base, const std::string& path,
                                 SentencePieceModel& m) {
  WireReader r(bytes, base, path);
  return ForEachField(r, [&](WireReader& r, uint32_t field, uint32_t wire) -> absl::Status {
    uint64_t offset = 0;
    std::string_view text;
    switch (field) {
      case 1:
        RETURN_IF_ERROR(r.Expect(wire, kLengthDelimited, "normalizer_spec.name"));
        RETURN_IF_ERROR(r.Bytes(text, offset));
        m.normalizer_name.assign(text);
        return absl::OkStatus();
      case 2:
        RETURN_IF_ERROR(r.Expect(wire, kLengthDelimited, "normalizer_spec.precompiled_charsmap"));
        RETURN_IF_ERROR(r.Bytes(text, offset));
        m.precompiled_charsmap_bytes = text.size();
        return absl::OkStatus();
      case 3: return VarintBool(r, wire, "normalizer_spec.add_dummy_prefix", m.add_dummy_prefix);
      case 4:
        return VarintBool(r, wire, "normalizer_spec.remove_extra_whitespaces",
                          m.remove_extra_whitespaces);
      case 5:
        return VarintBool(r, wire, "normalizer_spec.escape_whitespaces", m.escape_whitespaces);
      default: return r.Skip(wire);
    }
  });
}

}  // namespace

absl::StatusOr<SentencePieceModel> ParseSentencePieceModel(std::string_view bytes,
                                                           const std::string& path,
                                                           size_t max_pieces) {
  max_pieces = std::min(max_pieces, kMaxPieces);
  SentencePieceModel m;
  WireReader r(bytes, 0, path);
  RETURN_IF_ERROR(ForEachField(r, [&](WireReader& r, uint32_t field, uint32_t wire) -> absl::Status {
    if (field < 1 || field > 3) return r.Skip(wire);
    static constexpr const char* kNames[] = {"", "pieces", "trainer_spec", "normalizer_spec"};
    RETURN_IF_ERROR(r.Expect(wire, kLengthDelimited, kNames[field]));
    std::string_view sub;
    uint64_t offset = 0;
    RETURN_IF_ERROR(r.Bytes(sub, offset));
    if (field == 2) return ParseTrainerSpec(sub, offset, path, m);
    if (field == 3) return ParseNormalizerSpec(sub, offset, path, m);
    if (m.pieces.size() == max_pieces) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": more pieces than the model's ", max_pieces,
                       " embedding rows (config.json vocab_size); piece ", max_pieces,
                       " starts at byte ", offset));
    }
    m.pieces.emplace_back();
    return ParsePiece(sub, offset, path, m.pieces.size() - 1, m.pieces.back());
  }));
  if (m.pieces.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a SentencePiece model: no pieces"));
  }
  return m;
}

absl::StatusOr<SentencePieceModel> ReadSentencePieceModel(const std::string& path,
                                                          size_t max_pieces) {
  ASSIGN_OR_RETURN(std::string bytes, support::ReadSmallFile(path, kMaxModelBytes));
  return ParseSentencePieceModel(bytes, path, max_pieces);
}

}  // namespace slimpack::gguf_export
