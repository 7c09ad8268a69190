#include "formats/gguf/gguf_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "formats/gguf/gguf_reader_internal.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::gguf {
namespace {

using internal::kValueTypeCount;
using internal::LoadLE;
using internal::Quote;
using internal::ScalarBytes;

// Smallest encodings, used to bound counts before anything is allocated:
// a key/value is key length (8) + type (4) + at least 1 value byte; a tensor
// info is name length (8) + n_dims (4) + type (4) + offset (8).
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

std::string Hex(uint64_t v) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kHex[v & 15]);
    v >>= 4;
  } while (v != 0);
  return "0x" + out;
}

std::string Range(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

std::string Shape(const std::vector<int64_t>& ne) {
  std::string out = "[";
  for (size_t i = 0; i < ne.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ne[i]);
  }
  return out + "]";
}

}  // namespace

// ---------------------------------------------------------------- Parser

// A cursor over the untrusted buffer. Every read checks the bytes left first
// and names the field it was reading, so a truncation at any field says which.
class Parser {
 public:
  Parser(const uint8_t* data, uint64_t size, std::string label)
      : data_(data), size_(size), label_(std::move(label)) {}

  absl::StatusOr<GgufFile> Parse();

 private:
  uint64_t left() const { return size_ - pos_; }

  absl::Status Error(absl::StatusCode code, const std::string& msg) const {
    return absl::Status(code, label_ + ": " + msg);
  }
  absl::Status Invalid(const std::string& msg) const {
    return Error(absl::StatusCode::kInvalidArgument, msg);
  }

  // Checks that `n` bytes of `what` are left at the cursor.
  absl::Status Need(uint64_t n, const std::string& what) const {
    if (n <= left()) return absl::OkStatus();
    return Error(absl::StatusCode::kOutOfRange,
                 "truncated: " + what + " at offset " + std::to_string(pos_) +
                     " needs " + std::to_string(n) + " bytes, only " +
                     std::to_string(left()) + " left in the " +
                     std::to_string(size_) + "-byte file");
  }

  absl::StatusOr<uint64_t> ReadUInt(uint64_t n, const std::string& what) {
    RETURN_IF_ERROR(Need(n, what));
    const uint64_t v = LoadLE(data_ + pos_, n);
    pos_ += n;
    return v;
  }
  absl::StatusOr<uint32_t> ReadU32(const std::string& what) {
    ASSIGN_OR_RETURN(uint64_t v, ReadUInt(4, what));
    return static_cast<uint32_t>(v);
  }
  absl::StatusOr<uint64_t> ReadU64(const std::string& what) {
    return ReadUInt(8, what);
  }

  // u64 length + bytes. A length over `max_bytes` is InvalidArgument, one
  // past the end of the file OutOfRange; both before anything is copied.
  // `describe()` names the string for messages; it runs only on an error, so
  // a 150k-entry token array builds no message strings.
  template <typename Describe>
  absl::StatusOr<std::string_view> ReadString(const Describe& describe,
                                              uint64_t max_bytes) {
    if (left() < 8) return Need(8, describe() + " length");
    const uint64_t n = LoadLE(data_ + pos_, 8);
    pos_ += 8;
    if (n > max_bytes) {
      return Invalid(describe() + " is " + std::to_string(n) +
                     " bytes, over the " + std::to_string(max_bytes) +
                     "-byte limit");
    }
    if (n > left()) {
      return Error(absl::StatusCode::kOutOfRange,
                   describe() + " length " + std::to_string(n) +
                       " runs past the end of the file (" +
                       std::to_string(left()) + " bytes left at offset " +
                       std::to_string(pos_) + ")");
    }
    std::string_view s(reinterpret_cast<const char*>(data_) + pos_, n);
    pos_ += n;
    return s;
  }

  absl::Status ReadHeader(GgufFile& out, uint64_t* n_tensors, uint64_t* n_kv);
  absl::StatusOr<ValueType> ReadValueType(const std::string& ctx,
                                          const char* field);
  absl::Status ReadValue(const std::string& ctx, Value& v);
  absl::Status ReadMetadata(GgufFile& out, uint64_t n_kv);
  absl::Status ReadAlignment(GgufFile& out) const;
  absl::StatusOr<TensorInfo> ReadTensorInfo(uint64_t index, uint64_t alignment);
  absl::Status ReadTensorInfos(GgufFile& out, uint64_t n_tensors);
  absl::Status PlaceTensors(GgufFile& out);

  const uint8_t* data_;
  uint64_t size_;
  std::string label_;
  uint64_t pos_ = 0;
};

absl::Status Parser::ReadHeader(GgufFile& out, uint64_t* n_tensors,
                                uint64_t* n_kv) {
  RETURN_IF_ERROR(Need(4, "magic"));
  const uint32_t magic = static_cast<uint32_t>(LoadLE(data_, 4));
  if (magic != kMagic) {
    std::string shown(reinterpret_cast<const char*>(data_), 4);
    return Invalid("not a GGUF file: magic is " + Quote(shown) + " (" +
                   Hex(magic) + "), expected 'GGUF'");
  }
  pos_ = 4;
  ASSIGN_OR_RETURN(out.version, ReadU32("version"));
  if (out.version != 0 && (out.version & 0xffff) == 0) {
    return Invalid("version " + Hex(out.version) +
                   " looks byte-swapped: big-endian GGUF files are not "
                   "supported");
  }
  if (out.version == 0) return Invalid("version 0 is not a GGUF version");
  if (out.version == 1 || out.version > kVersion) {
    return absl::UnimplementedError(
        label_ + ": GGUF version " + std::to_string(out.version) +
        " is not supported (supported: 2, 3" +
        (out.version == 1 ? "; version 1 was dropped by llama.cpp in 2023" : "") +
        ")");
  }
  ASSIGN_OR_RETURN(*n_tensors, ReadU64("tensor_count"));
  ASSIGN_OR_RETURN(*n_kv, ReadU64("kv_count"));
  // Bound both counts by the bytes left before reading any entry.
  if (*n_kv > left() / kMinKvBytes) {
    return Error(absl::StatusCode::kOutOfRange,
                 "kv_count " + std::to_string(*n_kv) +
                     " cannot fit in the " + std::to_string(left()) +
                     " bytes left (each key/value takes at least " +
                     std::to_string(kMinKvBytes) + ")");
  }
  if (*n_tensors > left() / kMinTensorInfoBytes) {
    return Error(absl::StatusCode::kOutOfRange,
                 "tensor_count " + std::to_string(*n_tensors) +
                     " cannot fit in the " + std::to_string(left()) +
                     " bytes left (each tensor info takes at least " +
                     std::to_string(kMinTensorInfoBytes) + ")");
  }
  return absl::OkStatus();
}

absl::StatusOr<ValueType> Parser::ReadValueType(const std::string& ctx,
                                                const char* field) {
  ASSIGN_OR_RETURN(uint32_t t, ReadU32(ctx + " " + field));
  if (t >= kValueTypeCount) {
    return Invalid(ctx + " has unknown " + field + " " + std::to_string(t) +
                   " (valid: 0..12)");
  }
  return static_cast<ValueType>(t);
}

absl::Status Parser::ReadValue(const std::string& ctx, Value& v) {
  ASSIGN_OR_RETURN(v.type_, ReadValueType(ctx, "value type"));
  v.element_type_ = v.type_;
  v.count_ = 1;
  if (v.type_ == ValueType::kArray) {
    ASSIGN_OR_RETURN(v.element_type_, ReadValueType(ctx, "array element type"));
    if (v.element_type_ == ValueType::kArray) {
      // llama.cpp refuses nested arrays too; nothing writes them.
      return Invalid(ctx + " is an array of arrays, which GGUF readers do not "
                           "support");
    }
    ASSIGN_OR_RETURN(v.count_, ReadU64(ctx + " array count"));
  }
  const std::string elem_name(
      ValueTypeName(static_cast<uint32_t>(v.element_type_)));
  // Smallest possible bytes of the elements: a string is at least its 8-byte
  // length. This bounds every allocation below by the file size.
  const uint64_t min_elem = v.element_type_ == ValueType::kString
                                ? 8
                                : ScalarBytes(v.element_type_);
  if (!v.is_array()) {
    RETURN_IF_ERROR(Need(min_elem, ctx + " value (" + elem_name + ")"));
  }
  const std::optional<uint64_t> min_bytes = CheckedMul(v.count_, min_elem);
  if (!min_bytes || *min_bytes > left()) {
    return Error(absl::StatusCode::kOutOfRange,
                 ctx + " array of " + std::to_string(v.count_) + " " +
                     elem_name + " needs at least " +
                     (min_bytes ? std::to_string(*min_bytes) : "2^64") +
                     " bytes, only " + std::to_string(left()) +
                     " left at offset " + std::to_string(pos_));
  }
  if (v.element_type_ == ValueType::kString) {
    // No reserve(count): memory grows with the strings actually present, not
    // with a count that is only bounded by the bytes left.
    for (uint64_t i = 0; i < v.count_; ++i) {
      auto what = [&] {
        return v.is_array() ? ctx + " element [" + std::to_string(i) + "]"
                            : ctx + " string";
      };
      ASSIGN_OR_RETURN(std::string_view s,
                       ReadString(what, std::numeric_limits<uint64_t>::max()));
      v.strings_.push_back(s);
    }
    return absl::OkStatus();
  }
  v.raw_ = data_ + pos_;
  if (v.element_type_ == ValueType::kBool) {
    for (uint64_t i = 0; i < v.count_; ++i) {
      if (v.raw_[i] > 1) {
        return Invalid(ctx + (v.is_array() ? " element [" + std::to_string(i) + "]" : "") +
                       " bool value is " + std::to_string(v.raw_[i]) +
                       ", expected 0 or 1");
      }
    }
  }
  pos_ += *min_bytes;
  return absl::OkStatus();
}

absl::Status Parser::ReadMetadata(GgufFile& out, uint64_t n_kv) {
  // Vectors grow with the entries actually parsed (no reserve(n_kv)).
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string nth = "key #" + std::to_string(i);
    KeyValue kv;
    ASSIGN_OR_RETURN(kv.key, ReadString([&] { return nth; }, kMaxKeyBytes));
    if (kv.key.empty()) return Invalid(nth + " is empty");
    const std::string ctx = "key " + Quote(kv.key);
    auto [it, inserted] = out.key_index.emplace(kv.key, i);
    if (!inserted) {
      return Invalid("duplicate " + ctx + " (entries #" +
                     std::to_string(it->second) + " and #" +
                     std::to_string(i) + ")");
    }
    RETURN_IF_ERROR(ReadValue(ctx, kv.value));
    out.metadata.push_back(std::move(kv));
  }
  return absl::OkStatus();
}

absl::Status Parser::ReadAlignment(GgufFile& out) const {
  const Value* v = out.FindValue("general.alignment");
  if (v == nullptr) {
    out.alignment = kDefaultAlignment;
    return absl::OkStatus();
  }
  if (v->type() != ValueType::kU32) {
    return Invalid("key 'general.alignment' must be a u32, found " +
                   v->Describe());
  }
  const uint64_t a = *v->GetUInt();
  if (a == 0 || (a & (a - 1)) != 0) {
    return Invalid("key 'general.alignment' is " + std::to_string(a) +
                   ", not a power of two");
  }
  if (a > kMaxAlignment) {
    return Invalid("key 'general.alignment' is " + std::to_string(a) +
                   ", over the " + std::to_string(kMaxAlignment) +
                   "-byte limit");
  }
  out.alignment = a;
  return absl::OkStatus();
}

absl::StatusOr<TensorInfo> Parser::ReadTensorInfo(uint64_t index,
                                                  uint64_t alignment) {
  TensorInfo t;
  const std::string nth = "tensor #" + std::to_string(index);
  ASSIGN_OR_RETURN(t.name, ReadString([&] { return nth + " name"; },
                                      kMaxTensorNameBytes));
  if (t.name.empty()) return Invalid(nth + " has an empty name");
  const std::string ctx = "tensor " + Quote(t.name);

  ASSIGN_OR_RETURN(uint32_t n_dims, ReadU32(ctx + " n_dims"));
  if (n_dims > kMaxDims) {
    return Invalid(ctx + " has " + std::to_string(n_dims) +
                   " dimensions; ggml allows at most " +
                   std::to_string(kMaxDims));
  }
  t.ne.reserve(n_dims);
  uint64_t n_elements = 1;
  bool overflow = false;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const std::string dim = ctx + " ne[" + std::to_string(d) + "]";
    ASSIGN_OR_RETURN(uint64_t ne, ReadU64(dim));
    if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Invalid(dim + " is " + std::to_string(ne) + " (" +
                     std::to_string(static_cast<int64_t>(ne)) +
                     " as ggml's int64): dimensions must be in [0, 2^63)");
    }
    t.ne.push_back(static_cast<int64_t>(ne));
    // Keep reading the dims (a truncation there is reported as such), but
    // remember an overflow of the running product.
    if (auto p = CheckedMul(n_elements, ne)) {
      n_elements = *p;
    } else {
      overflow = true;
    }
  }
  // ggml counts elements in int64.
  if (overflow ||
      n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Invalid(ctx + " shape " + Shape(t.ne) +
                   " has 2^63 or more elements");
  }
  t.n_elements = n_elements;

  ASSIGN_OR_RETURN(t.type, ReadU32(ctx + " type"));
  if (!GetTypeTraits(t.type, &t.traits)) {
    const std::string_view ggml = GgmlTypeName(t.type);
    if (ggml.empty()) {
      return Invalid(ctx + " has unknown ggml type " + std::to_string(t.type));
    }
    return absl::UnimplementedError(
        label_ + ": " + ctx + " has ggml type " + std::to_string(t.type) +
        " (" + std::string(ggml) + "), which slimpack does not read (supported: " +
        SupportedTypeNames() + ")");
  }
  const uint64_t row = n_dims == 0 ? 1 : static_cast<uint64_t>(t.ne[0]);
  if (row % t.traits.block_size != 0) {
    return Invalid(ctx + " of type " + std::string(t.traits.name) + " has " +
                   std::to_string(row) +
                   " elements per row (ne[0]), not a multiple of the block "
                   "size " +
                   std::to_string(t.traits.block_size));
  }
  // n_elements is a multiple of the block size because ne[0] is.
  const std::optional<uint64_t> bytes =
      CheckedMul(n_elements / t.traits.block_size, t.traits.block_bytes);
  if (!bytes) {
    return Invalid(ctx + " " + std::string(t.traits.name) + " shape " +
                   Shape(t.ne) + " byte size overflows 64 bits");
  }
  t.n_bytes = *bytes;

  ASSIGN_OR_RETURN(t.offset, ReadU64(ctx + " offset"));
  if (t.offset % alignment != 0) {
    return Invalid(ctx + " offset " + std::to_string(t.offset) +
                   " is not a multiple of the alignment " +
                   std::to_string(alignment));
  }
  return t;
}

absl::Status Parser::ReadTensorInfos(GgufFile& out, uint64_t n_tensors) {
  for (uint64_t i = 0; i < n_tensors; ++i) {
    ASSIGN_OR_RETURN(TensorInfo t, ReadTensorInfo(i, out.alignment));
    auto [it, inserted] = out.tensor_index.emplace(t.name, i);
    if (!inserted) {
      return Invalid("duplicate tensor name " + Quote(t.name) +
                     " (tensors #" + std::to_string(it->second) + " and #" +
                     std::to_string(i) + ")");
    }
    out.tensors.push_back(std::move(t));
  }
  return absl::OkStatus();
}

// Bounds, then overlap, then llama.cpp's running-offset rule, in that order
// so each kind of damage gets its own message.
absl::Status Parser::PlaceTensors(GgufFile& out) {
  const std::optional<uint64_t> start = CheckedAlignUp(pos_, out.alignment);
  if (!start) return Invalid("data section offset overflows 64 bits");
  out.data_offset = *start;
  const uint64_t data_size = out.data_offset <= size_ ? size_ - out.data_offset : 0;
  for (TensorInfo& t : out.tensors) {
    const std::optional<uint64_t> end = CheckedAdd(t.offset, t.n_bytes);
    if (!end || *end > data_size) {
      return Error(
          absl::StatusCode::kOutOfRange,
          "tensor " + Quote(t.name) + " data " +
              (end ? Range(t.offset, *end)
                   : "[" + std::to_string(t.offset) + ", 2^64+)") +
              " (" + std::to_string(t.n_bytes) + " bytes of " +
              std::string(t.traits.name) + " " + Shape(t.ne) +
              ") runs past the end of the " + std::to_string(data_size) +
              "-byte data section (data starts at file offset " +
              std::to_string(out.data_offset) + ", file is " +
              std::to_string(size_) + " bytes)");
    }
    // A zero-byte tensor may sit at an offset past the end of a file that
    // stops before the data section; it gets no pointer.
    t.data = out.data_offset <= size_ ? data_ + out.data_offset + t.offset
                                      : nullptr;
  }

  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(out.tensors.size());
  for (const TensorInfo& t : out.tensors) {
    if (t.n_bytes > 0) by_offset.push_back(&t);
  }
  // Stable: of two tensors at one offset, the later in the file is named.
  std::stable_sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) {
              return a->offset < b->offset;
            });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& prev = *by_offset[i - 1];
    const TensorInfo& cur = *by_offset[i];
    if (cur.offset < prev.offset + prev.n_bytes) {
      return Invalid("tensor " + Quote(cur.name) + " data " +
                     Range(cur.offset, cur.offset + cur.n_bytes) +
                     " overlaps tensor " + Quote(prev.name) + " " +
                     Range(prev.offset, prev.offset + prev.n_bytes));
    }
  }

  uint64_t expected = 0;
  for (const TensorInfo& t : out.tensors) {
    if (t.offset != expected) {
      return Invalid("tensor " + Quote(t.name) + " has offset " +
                     std::to_string(t.offset) + ", expected " +
                     std::to_string(expected) +
                     " (tensors must be stored in header order, each padded "
                     "to the alignment " +
                     std::to_string(out.alignment) + ", as llama.cpp requires)");
    }
    // Cannot wrap: offset + n_bytes <= data_size and alignment <= 2^20.
    expected = *CheckedAlignUp(t.offset + t.n_bytes, out.alignment);
  }
  return absl::OkStatus();
}

absl::StatusOr<GgufFile> Parser::Parse() {
  GgufFile out;
  out.label = label_;
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  RETURN_IF_ERROR(ReadHeader(out, &n_tensors, &n_kv));
  RETURN_IF_ERROR(ReadMetadata(out, n_kv));
  RETURN_IF_ERROR(ReadAlignment(out));
  RETURN_IF_ERROR(ReadTensorInfos(out, n_tensors));
  RETURN_IF_ERROR(PlaceTensors(out));
  return out;
}

absl::StatusOr<GgufFile> ParseGguf(const uint8_t* data, uint64_t size,
                                   std::string file_label) {
  return Parser(data, size, std::move(file_label)).Parse();
}

absl::StatusOr<GgufFile> OpenGgufFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::Open(path));
  ASSIGN_OR_RETURN(GgufFile out, ParseGguf(file->data(), file->size(), path));
  out.mapping = std::move(file);
  return out;
}

}  // namespace slimpack::gguf
