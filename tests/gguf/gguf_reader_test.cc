// GGUF container reader: valid files built byte by byte (every value type,
// arrays, tensors of several ggml types, alignment 32 and 64), then a
// corruption table with one handmade bad file per failure mode, each expected
// to fail with a specific code and a message naming the key or tensor and the
// value found; truncation at every byte and random byte flips must never crash.
#include "formats/gguf/gguf_reader.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// ------------------------------------------------------------ byte builder

void PutLE(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
std::string U8(uint8_t v) { std::string s; PutLE(s, v, 1); return s; }
std::string U16(uint16_t v) { std::string s; PutLE(s, v, 2); return s; }
std::string U32(uint32_t v) { std::string s; PutLE(s, v, 4); return s; }
std::string U64(uint64_t v) { std::string s; PutLE(s, v, 8); return s; }
std::string F32(float f) { uint32_t b; std::memcpy(&b, &f, 4); return U32(b); }
std::string F64(double d) { uint64_t b; std::memcpy(&b, &d, 8); return U64(b); }
std::string Str(std::string_view s) { return U64(s.size()) + std::string(s); }
std::string Type(ValueType t) { return U32(static_cast<uint32_t>(t)); }

// Encoded values: type tag + payload.
std::string VU8(uint8_t v) { return Type(ValueType::kU8) + U8(v); }
std::string VI8(int8_t v) { return Type(ValueType::kI8) + U8(static_cast<uint8_t>(v)); }
std::string VU16(uint16_t v) { return Type(ValueType::kU16) + U16(v); }
std::string VI16(int16_t v) { return Type(ValueType::kI16) + U16(static_cast<uint16_t>(v)); }
std::string VU32(uint32_t v) { return Type(ValueType::kU32) + U32(v); }
std::string VI32(int32_t v) { return Type(ValueType::kI32) + U32(static_cast<uint32_t>(v)); }
std::string VF32(float v) { return Type(ValueType::kF32) + F32(v); }
std::string VBool(uint8_t v) { return Type(ValueType::kBool) + U8(v); }
std::string VStr(std::string_view s) { return Type(ValueType::kString) + Str(s); }
std::string VU64(uint64_t v) { return Type(ValueType::kU64) + U64(v); }
std::string VI64(int64_t v) { return Type(ValueType::kI64) + U64(static_cast<uint64_t>(v)); }
std::string VF64(double v) { return Type(ValueType::kF64) + F64(v); }
// Array of `count` elements whose encodings (no tags) are `elems`.
std::string VArr(ValueType elem, uint64_t count, const std::string& elems) {
  return Type(ValueType::kArray) + Type(elem) + U64(count) + elems;
}
std::string VStrArr(const std::vector<std::string>& items) {
  std::string elems;
  for (const std::string& s : items) elems += Str(s);
  return VArr(ValueType::kString, items.size(), elems);
}

struct TensorSpec {
  TensorSpec(std::string n, std::vector<uint64_t> dims, uint32_t t)
      : name(std::move(n)), ne(std::move(dims)), type(t) {}
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = static_cast<uint32_t>(TensorType::kF32);
  std::optional<uint64_t> offset;  // default: the running padded offset
  std::optional<uint64_t> bytes;   // default: computed from type and ne
};

struct FileSpec {
  uint32_t magic = kMagic;
  uint32_t version = 3;
  std::vector<std::pair<std::string, std::string>> kvs;  // key, encoded value
  std::vector<TensorSpec> tensors;
  uint64_t alignment = 32;  // used for padding; add the key yourself
  std::optional<uint64_t> kv_count;      // default: kvs.size()
  std::optional<uint64_t> tensor_count;  // default: tensors.size()
};

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

uint64_t SpecBytes(const TensorSpec& t) {
  if (t.bytes) return *t.bytes;
  TypeTraits traits;
  if (!GetTypeTraits(t.type, &traits)) return 0;
  uint64_t n = 1;
  for (uint64_t d : t.ne) n *= d;
  return n / traits.block_size * traits.block_bytes;
}

// Byte i of tensor k's data.
uint8_t Pattern(size_t k, uint64_t i) {
  return static_cast<uint8_t>(k * 37 + i * 7 + 1);
}

struct Built {
  std::string bytes;
  uint64_t data_offset = 0;
  std::vector<uint64_t> offsets;
};

Built Build(const FileSpec& spec) {
  Built b;
  std::string& out = b.bytes;
  out += U32(spec.magic) + U32(spec.version);
  out += U64(spec.tensor_count.value_or(spec.tensors.size()));
  out += U64(spec.kv_count.value_or(spec.kvs.size()));
  for (const auto& [key, value] : spec.kvs) out += Str(key) + value;
  uint64_t running = 0;
  for (const TensorSpec& t : spec.tensors) {
    out += Str(t.name) + U32(static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) out += U64(d);
    const uint64_t offset = t.offset.value_or(running);
    out += U32(t.type) + U64(offset);
    b.offsets.push_back(offset);
    running = AlignUp(offset + SpecBytes(t), spec.alignment);
  }
  out.resize(AlignUp(out.size(), spec.alignment), '\0');
  b.data_offset = out.size();
  for (size_t k = 0; k < spec.tensors.size(); ++k) {
    if (b.offsets[k] > (uint64_t{1} << 32)) continue;  // a bad-offset case
    const uint64_t begin = b.data_offset + b.offsets[k];
    const uint64_t n = SpecBytes(spec.tensors[k]);
    if (begin + n > out.size()) out.resize(begin + n, '\0');
    for (uint64_t i = 0; i < n; ++i) out[begin + i] = static_cast<char>(Pattern(k, i));
  }
  out.resize(AlignUp(out.size(), spec.alignment), '\0');
  return b;
}

absl::StatusOr<GgufFile> Parse(const std::string& bytes) {
  return ParseGguf(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                   "m.gguf");
}

uint32_t T(TensorType t) { return static_cast<uint32_t>(t); }

// A small valid llama-like file: a few keys and three tensors.
FileSpec SmallValid() {
  FileSpec s;
  s.kvs = {{"general.architecture", VStr("llama")},
           {"llama.block_count", VU32(2)},
           {"tokenizer.ggml.tokens", VStrArr({"a", "b", "c"})}};
  s.tensors = {{"token_embd.weight", {32, 3}, T(TensorType::kQ8_0)},
               {"output_norm.weight", {32}, T(TensorType::kF32)},
               {"output.weight", {32, 3}, T(TensorType::kF16)}};
  return s;
}

// ------------------------------------------------------------ valid files

TEST(GgufReaderTest, ReadsEveryValueType) {
  FileSpec s;
  s.kvs = {{"t.u8", VU8(250)},
           {"t.i8", VI8(-100)},
           {"t.u16", VU16(65535)},
           {"t.i16", VI16(-30000)},
           {"t.u32", VU32(4000000000u)},
           {"t.i32", VI32(-2000000000)},
           {"t.f32", VF32(1.5f)},
           {"t.bool", VBool(1)},
           {"t.str", VStr(std::string("he\0llo", 6))},
           {"t.u64", VU64(kU64Max)},
           {"t.i64", VI64(std::numeric_limits<int64_t>::min())},
           {"t.f64", VF64(-2.25)},
           {"t.empty_str", VStr("")}};
  const std::string bytes = Build(s).bytes;
  auto f = Parse(bytes);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->version, 3u);
  ASSERT_EQ(f->metadata.size(), 13u);
  EXPECT_EQ(f->metadata[0].key, "t.u8");  // file order kept
  EXPECT_EQ(f->FindValue("t.u8")->GetUInt(), 250u);
  EXPECT_EQ(f->FindValue("t.i8")->GetInt(), -100);
  EXPECT_EQ(f->FindValue("t.i8")->GetUInt(), std::nullopt);
  EXPECT_EQ(f->FindValue("t.u16")->GetUInt(), 65535u);
  EXPECT_EQ(f->FindValue("t.i16")->GetInt(), -30000);
  EXPECT_EQ(f->FindValue("t.u32")->GetUInt(), 4000000000u);
  EXPECT_EQ(f->FindValue("t.i32")->GetInt(), -2000000000);
  EXPECT_EQ(f->FindValue("t.f32")->GetFloat(), 1.5);
  EXPECT_EQ(f->FindValue("t.f32")->GetInt(), std::nullopt);
  EXPECT_EQ(f->FindValue("t.bool")->GetBool(), true);
  EXPECT_EQ(f->FindValue("t.str")->GetString(), std::string_view("he\0llo", 6));
  EXPECT_EQ(f->FindValue("t.u64")->GetUInt(), kU64Max);
  EXPECT_EQ(f->FindValue("t.u64")->GetInt(), std::nullopt);
  EXPECT_EQ(f->FindValue("t.i64")->GetInt(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f->FindValue("t.f64")->GetFloat(), -2.25);
  EXPECT_EQ(f->FindValue("t.empty_str")->GetString(), "");
  EXPECT_EQ(f->FindValue("t.f64")->type(), ValueType::kF64);
  EXPECT_FALSE(f->FindValue("t.f64")->is_array());
  EXPECT_EQ(f->FindValue("t.str")->GetInt(), std::nullopt);
  EXPECT_EQ(f->FindValue("t.u8")->GetUInt(1), std::nullopt);  // a scalar has one element
  EXPECT_EQ(f->FindValue("missing"), nullptr);
  EXPECT_EQ(f->alignment, kDefaultAlignment);
  EXPECT_TRUE(f->tensors.empty());
  EXPECT_EQ(f->FindValue("t.u32")->Describe(), "u32 4000000000");
  EXPECT_EQ(f->FindValue("t.i8")->Describe(), "i8 -100");
}

TEST(GgufReaderTest, ReadsArraysOfEveryElementType) {
  std::string i16s = U16(static_cast<uint16_t>(-5)) + U16(7);
  std::string f32s = F32(0.5f) + F32(-1.0f) + F32(3.0f);
  FileSpec s;
  s.kvs = {{"a.u8", VArr(ValueType::kU8, 3, U8(1) + U8(2) + U8(255))},
           {"a.i16", VArr(ValueType::kI16, 2, i16s)},
           {"a.f32", VArr(ValueType::kF32, 3, f32s)},
           {"a.bool", VArr(ValueType::kBool, 2, U8(0) + U8(1))},
           {"a.u64", VArr(ValueType::kU64, 1, U64(1) )},
           {"a.f64", VArr(ValueType::kF64, 1, F64(0.25))},
           {"a.i32", VArr(ValueType::kI32, 2, U32(static_cast<uint32_t>(-1)) + U32(9))},
           {"a.str", VStrArr({"x", "", "hello world"})},
           {"a.empty", VArr(ValueType::kU32, 0, "")}};
  const std::string bytes = Build(s).bytes;
  auto f = Parse(bytes);
  ASSERT_THAT(f, IsOk());
  const Value* u8 = f->FindValue("a.u8");
  ASSERT_TRUE(u8->is_array());
  EXPECT_EQ(u8->element_type(), ValueType::kU8);
  EXPECT_EQ(u8->size(), 3u);
  EXPECT_EQ(u8->GetUInt(2), 255u);
  EXPECT_EQ(u8->GetUInt(3), std::nullopt);
  EXPECT_EQ(f->FindValue("a.i16")->GetInt(0), -5);
  EXPECT_EQ(f->FindValue("a.i16")->GetInt(1), 7);
  EXPECT_EQ(f->FindValue("a.f32")->GetFloat(1), -1.0);
  EXPECT_EQ(f->FindValue("a.f32")->GetFloat(2), 3.0);
  EXPECT_EQ(f->FindValue("a.bool")->GetBool(0), false);
  EXPECT_EQ(f->FindValue("a.bool")->GetBool(1), true);
  EXPECT_EQ(f->FindValue("a.u64")->GetUInt(0), 1u);
  EXPECT_EQ(f->FindValue("a.f64")->GetFloat(0), 0.25);
  EXPECT_EQ(f->FindValue("a.i32")->GetInt(0), -1);
  const Value* str = f->FindValue("a.str");
  EXPECT_EQ(str->size(), 3u);
  EXPECT_EQ(str->GetString(0), "x");
  EXPECT_EQ(str->GetString(1), "");
  EXPECT_EQ(str->GetString(2), "hello world");
  EXPECT_EQ(str->GetString(3), std::nullopt);
  EXPECT_EQ(str->Describe(), "arr[str] of 3");
  EXPECT_EQ(f->FindValue("a.empty")->size(), 0u);
}

TEST(GgufReaderTest, ReadsALargeTokenizerStringArray) {
  std::vector<std::string> tokens;
  for (int i = 0; i < 150000; ++i) tokens.push_back("tok" + std::to_string(i));
  FileSpec s;
  s.kvs = {{"tokenizer.ggml.tokens", VStrArr(tokens)}};
  const std::string bytes = Build(s).bytes;
  auto f = Parse(bytes);
  ASSERT_THAT(f, IsOk());
  const Value* v = f->FindValue("tokenizer.ggml.tokens");
  ASSERT_EQ(v->size(), 150000u);
  EXPECT_EQ(v->GetString(0), "tok0");
  EXPECT_EQ(v->GetString(149999), "tok149999");
}

TEST(GgufReaderTest, ReadsTensorsOfSeveralTypesAtDefaultAlignment) {
  FileSpec s;
  s.kvs = {{"general.architecture", VStr("llama")}};
  s.tensors = {{"f32", {3, 2}, T(TensorType::kF32)},          // 24 bytes
               {"f16", {5}, T(TensorType::kF16)},             // 10
               {"q4_0", {64, 2}, T(TensorType::kQ4_0)},       // 4 blocks x 18
               {"q8_0", {32}, T(TensorType::kQ8_0)},          // 34
               {"q4_K", {256, 1, 2}, T(TensorType::kQ4_K)},   // 2 x 144
               {"q6_K", {256}, T(TensorType::kQ6_K)},         // 210
               {"bf16", {2, 2, 2, 2}, T(TensorType::kBF16)},  // 32
               {"empty", {0, 4}, T(TensorType::kF32)},        // 0
               {"scalar", {}, T(TensorType::kF32)}};          // 4
  Built b = Build(s);
  auto f = Parse(b.bytes);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->alignment, 32u);
  EXPECT_EQ(f->data_offset, b.data_offset);
  EXPECT_EQ(f->data_offset % 32, 0u);
  const std::vector<uint64_t> want_bytes = {24, 10, 72, 34, 288, 210, 32, 0, 4};
  ASSERT_EQ(f->tensors.size(), want_bytes.size());
  for (size_t k = 0; k < want_bytes.size(); ++k) {
    const TensorInfo& t = f->tensors[k];
    SCOPED_TRACE(std::string(t.name));
    EXPECT_EQ(t.name, s.tensors[k].name);
    EXPECT_EQ(t.n_bytes, want_bytes[k]);
    EXPECT_EQ(t.offset, b.offsets[k]);
    EXPECT_EQ(t.offset % 32, 0u);
    EXPECT_EQ(t.ne.size(), s.tensors[k].ne.size());
    if (t.n_bytes > 0) {
      EXPECT_EQ(t.data, reinterpret_cast<const uint8_t*>(b.bytes.data()) +
                            b.data_offset + t.offset);
      EXPECT_EQ(t.data[0], Pattern(k, 0));
      EXPECT_EQ(t.data[t.n_bytes - 1], Pattern(k, t.n_bytes - 1));
    }
  }
  const TensorInfo* q4k = f->FindTensor("q4_K");
  ASSERT_NE(q4k, nullptr);
  EXPECT_EQ(q4k->ne, (std::vector<int64_t>{256, 1, 2}));
  EXPECT_EQ(q4k->type, T(TensorType::kQ4_K));
  EXPECT_EQ(q4k->traits.name, "q4_K");
  EXPECT_EQ(q4k->n_elements, 512u);
  EXPECT_EQ(f->FindTensor("scalar")->n_elements, 1u);
  EXPECT_EQ(f->FindTensor("empty")->n_elements, 0u);
  EXPECT_EQ(f->FindTensor("nope"), nullptr);
}

TEST(GgufReaderTest, ReadsAlignment64AndVersion2) {
  FileSpec s = SmallValid();
  s.version = 2;
  s.alignment = 64;
  s.kvs.push_back({"general.alignment", VU32(64)});
  s.tensors.insert(s.tensors.begin(), TensorSpec{"small", {8}, T(TensorType::kF32)});
  Built b = Build(s);
  auto f = Parse(b.bytes);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->version, 2u);
  EXPECT_EQ(f->alignment, 64u);
  EXPECT_EQ(f->data_offset % 64, 0u);
  EXPECT_EQ(f->data_offset, b.data_offset);
  EXPECT_EQ(f->tensors[1].offset, 64u);   // after 32 bytes of f32 [8]
  EXPECT_EQ(f->tensors[2].offset, 192u);  // after q8_0 [32, 3]: 102 bytes
  EXPECT_EQ(f->tensors[3].offset, 320u);  // after f32 [32]: 128 bytes
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(f->tensors[k].offset, b.offsets[k]);
}

TEST(GgufReaderTest, AcceptsAlignmentOne) {
  FileSpec s = SmallValid();
  s.alignment = 1;
  s.kvs.push_back({"general.alignment", VU32(1)});
  const std::string bytes = Build(s).bytes;
  auto f = Parse(bytes);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->tensors[1].offset, 102u);
}

TEST(GgufReaderTest, AcceptsAHeaderOnlyFileWithoutPadding) {
  const std::string bytes = U32(kMagic) + U32(3) + U64(0) + U64(0);
  auto f = Parse(bytes);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->data_offset, 32u);
  EXPECT_TRUE(f->metadata.empty());
}

TEST(GgufReaderTest, OpenGgufFileKeepsTheMappingAlive) {
  char path[] = "/tmp/gguf_reader_testXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string bytes = Build(SmallValid()).bytes;
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  close(fd);
  auto f = OpenGgufFile(path);
  std::remove(path);
  ASSERT_THAT(f, IsOk());
  ASSERT_NE(f->mapping, nullptr);
  EXPECT_EQ(f->label, path);
  GgufFile copy = *f;  // views stay valid in a copy
  f = absl::UnknownError("dropped");
  EXPECT_EQ(copy.FindValue("general.architecture")->GetString(), "llama");
  EXPECT_EQ(copy.FindTensor("output_norm.weight")->data[0], Pattern(1, 0));
}

TEST(GgufReaderTest, OpenGgufFileReportsAMissingFile) {
  EXPECT_THAT(OpenGgufFile("/nonexistent/x.gguf"),
              StatusIs(Code::kNotFound, HasSubstr("/nonexistent/x.gguf")));
}

// ------------------------------------------------------------ bad files

struct BadCase {
  std::string name;
  std::string bytes;
  Code code;
  std::vector<std::string> fragments;  // besides "m.gguf: "
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

// SmallValid with `edit` applied to its spec.
template <typename Edit>
std::string Edited(Edit edit) {
  FileSpec s = SmallValid();
  edit(s);
  return Build(s).bytes;
}

// A file whose only key is `key` holding the raw `value` bytes (tag included).
std::string OneKv(const std::string& key, const std::string& value) {
  return U32(kMagic) + U32(3) + U64(0) + U64(1) + Str(key) + value;
}

// A file whose only tensor info is the raw `info` bytes.
std::string OneTensor(const std::string& info) {
  return U32(kMagic) + U32(3) + U64(1) + U64(0) + info;
}

std::string Header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  return U32(kMagic) + U32(version) + U64(n_tensors) + U64(n_kv);
}

std::vector<BadCase> BadCases() {
  const std::string valid = Build(SmallValid()).bytes;
  const std::string f32 = U32(T(TensorType::kF32));
  const std::string pad(64, '\0');
  // Long enough that truncations inside a tensor info or key still leave the
  // bytes the count bound asks for.
  const std::string lname = "blk.0.attn_q.weight.and.some.more.text";
  const std::string long_kv = Str(std::string(30, 'k')) + VU8(1);
  return {
      // Framing.
      {"Empty", "", Code::kOutOfRange, {"truncated: magic", "0 left"}},
      {"ThreeBytes", "GGU", Code::kOutOfRange, {"truncated: magic", "needs 4 bytes"}},
      {"BadMagic", "GGML" + valid.substr(4), Code::kInvalidArgument,
       {"not a GGUF file", "'GGML'", "0x4c4d4747"}},
      {"TruncatedVersion", valid.substr(0, 6), Code::kOutOfRange,
       {"truncated: version at offset 4"}},
      {"Version0", Header(0, 0, 0), Code::kInvalidArgument, {"version 0"}},
      {"Version1", Header(1, 0, 0), Code::kUnimplemented,
       {"GGUF version 1 is not supported", "dropped"}},
      {"Version4", Header(4, 0, 0), Code::kUnimplemented,
       {"GGUF version 4 is not supported", "supported: 2, 3"}},
      {"ByteSwappedVersion", Header(0x03000000, 0, 0), Code::kInvalidArgument,
       {"0x3000000", "byte-swapped"}},
      {"TruncatedTensorCount", valid.substr(0, 12), Code::kOutOfRange,
       {"truncated: tensor_count at offset 8"}},
      {"TruncatedKvCount", valid.substr(0, 20), Code::kOutOfRange,
       {"truncated: kv_count at offset 16"}},
      {"HugeKvCount", Header(3, 0, uint64_t{1} << 62) + pad, Code::kOutOfRange,
       {"kv_count 4611686018427387904 cannot fit in the 64 bytes left"}},
      {"HugeTensorCount", Header(3, kU64Max, 0) + pad, Code::kOutOfRange,
       {"tensor_count 18446744073709551615 cannot fit"}},
      // Keys.
      {"KvCountPastEnd", Header(3, 0, 1) + U32(5), Code::kOutOfRange,
       {"kv_count 1 cannot fit in the 4 bytes left (each key/value takes at least 13)"}},
      {"TruncatedKeyLength", Header(3, 0, 2) + long_kv + U32(5), Code::kOutOfRange,
       {"truncated: key #1 length at offset 67"}},
      {"KeyPastEnd", Header(3, 0, 1) + U64(1000) + "abcde", Code::kOutOfRange,
       {"key #0 length 1000 runs past the end of the file"}},
      {"HugeKeyLength", Header(3, 0, 1) + U64(uint64_t{1} << 63) + pad,
       Code::kInvalidArgument,
       {"key #0 is 9223372036854775808 bytes, over the 65535-byte limit"}},
      {"EmptyKey", OneKv("", VU32(1)), Code::kInvalidArgument, {"key #0 is empty"}},
      {"DuplicateKey",
       Header(3, 0, 2) + Str("a.b") + VU32(1) + Str("a.b") + VU8(2),
       Code::kInvalidArgument, {"duplicate key 'a.b' (entries #0 and #1)"}},
      {"UnknownValueType", OneKv("k", U32(13) + U32(0)), Code::kInvalidArgument,
       {"key 'k' has unknown value type 13"}},
      {"TruncatedValueType", OneKv("kkkkk", U16(4)), Code::kOutOfRange,
       {"truncated: key 'kkkkk' value type at offset 37 needs 4 bytes, only 2 left"}},
      {"TruncatedScalar", OneKv("k", Type(ValueType::kU32) + U16(4)),
       Code::kOutOfRange, {"truncated: key 'k' value (u32)", "needs 4 bytes, only 2 left"}},
      {"HugeStringValue", OneKv("k", Type(ValueType::kString) + U64(uint64_t{1} << 63)),
       Code::kOutOfRange,
       {"key 'k' string length 9223372036854775808 runs past the end"}},
      {"BoolTwo", OneKv("k", VBool(2)), Code::kInvalidArgument,
       {"key 'k' bool value is 2, expected 0 or 1"}},
      {"KeyWithControlBytesIsQuoted", OneKv("a\x1b[2J", VBool(9)),
       Code::kInvalidArgument, {"key 'a\\x1b[2J' bool value is 9"}},
      // Arrays.
      {"HugeArrayCount", OneKv("k", Type(ValueType::kArray) + Type(ValueType::kU32) +
                                        U64(uint64_t{1} << 62)),
       Code::kOutOfRange,
       {"key 'k' array of 4611686018427387904 u32 needs at least 2^64 bytes"}},
      {"ArrayCountPastEnd",
       OneKv("k", VArr(ValueType::kU8, uint64_t{1} << 40, "abc")),
       Code::kOutOfRange,
       {"key 'k' array of 1099511627776 u8 needs at least 1099511627776 bytes, only 3 left"}},
      {"HugeStringArrayCount",
       OneKv("k", VArr(ValueType::kString, uint64_t{1} << 61, U64(0))),
       Code::kOutOfRange, {"array of 2305843009213693952 str needs at least 2^64 bytes"}},
      {"TruncatedArrayCount", OneKv("k", Type(ValueType::kArray) + Type(ValueType::kU8) + U32(1)),
       Code::kOutOfRange, {"truncated: key 'k' array count"}},
      {"ArrayOfArrays",
       OneKv("k", VArr(ValueType::kArray, 1, Type(ValueType::kU8) + U64(0))),
       Code::kInvalidArgument, {"key 'k' is an array of arrays"}},
      {"UnknownArrayElementType", OneKv("k", VArr(static_cast<ValueType>(99), 1, U8(0))),
       Code::kInvalidArgument, {"key 'k' has unknown array element type 99"}},
      {"StringArrayElementPastEnd",
       OneKv("k", VArr(ValueType::kString, 2, Str("ok") + U64(50) + "short")),
       Code::kOutOfRange, {"key 'k' element [1] length 50 runs past the end"}},
      {"BoolArrayElement", OneKv("k", VArr(ValueType::kBool, 3, U8(1) + U8(7) + U8(0))),
       Code::kInvalidArgument, {"key 'k' element [1] bool value is 7"}},
      // general.alignment.
      {"AlignmentWrongType",
       Edited([](FileSpec& s) { s.kvs.push_back({"general.alignment", VI32(64)}); }),
       Code::kInvalidArgument, {"'general.alignment' must be a u32, found i32 64"}},
      {"AlignmentZero",
       Edited([](FileSpec& s) { s.kvs.push_back({"general.alignment", VU32(0)}); }),
       Code::kInvalidArgument, {"'general.alignment' is 0, not a power of two"}},
      {"AlignmentNotPowerOfTwo",
       Edited([](FileSpec& s) { s.kvs.push_back({"general.alignment", VU32(48)}); }),
       Code::kInvalidArgument, {"'general.alignment' is 48, not a power of two"}},
      {"AlignmentHuge",
       Edited([](FileSpec& s) {
         s.kvs.push_back({"general.alignment", VU32(uint32_t{1} << 30)});
       }),
       Code::kInvalidArgument, {"is 1073741824, over the 1048576-byte limit"}},
      // Tensor infos.
      {"TensorNameTooLong",
       Edited([](FileSpec& s) { s.tensors[1].name = std::string(64, 'n'); }),
       Code::kInvalidArgument, {"tensor #1 name is 64 bytes, over the 63-byte limit"}},
      {"EmptyTensorName", Edited([](FileSpec& s) { s.tensors[2].name = ""; }),
       Code::kInvalidArgument, {"tensor #2 has an empty name"}},
      {"DuplicateTensorName",
       Edited([](FileSpec& s) { s.tensors[2].name = "token_embd.weight"; }),
       Code::kInvalidArgument,
       {"duplicate tensor name 'token_embd.weight' (tensors #0 and #2)"}},
      {"TooManyDims", Edited([](FileSpec& s) { s.tensors[1].ne = {32, 1, 1, 1, 1}; }),
       Code::kInvalidArgument,
       {"tensor 'output_norm.weight' has 5 dimensions; ggml allows at most 4"}},
      {"NDimsMax", OneTensor(Str("w") + U32(0xffffffffu) + pad), Code::kInvalidArgument,
       {"tensor 'w' has 4294967295 dimensions"}},
      {"NegativeDim", Edited([](FileSpec& s) { s.tensors[1].ne = {32, uint64_t{1} << 63}; }),
       Code::kInvalidArgument,
       {"tensor 'output_norm.weight' ne[1] is 9223372036854775808 (-9223372036854775808"}},
      {"ElementCountOverflow",
       OneTensor(Str("w") + U32(2) + U64(uint64_t{1} << 32) + U64(uint64_t{1} << 32) + f32 +
                 U64(0) + pad),
       Code::kInvalidArgument,
       {"tensor 'w' shape [4294967296, 4294967296] has 2^63 or more elements"}},
      {"ElementCountWrapsToFour",
       OneTensor(Str("w") + U32(3) + U64(4194305) + U64(4194305) +
                 U64(211106198978564) + f32 + U64(0) + pad),
       Code::kInvalidArgument, {"tensor 'w' shape [4194305, 4194305, 211106198978564]"}},
      {"ByteSizeOverflow",
       OneTensor(Str("w") + U32(1) + U64(uint64_t{1} << 62) + f32 + U64(0) + pad),
       Code::kInvalidArgument,
       {"tensor 'w' f32 shape [4611686018427387904] byte size overflows 64 bits"}},
      {"UnknownGgmlType", Edited([](FileSpec& s) { s.tensors[0].type = 1234; }),
       Code::kInvalidArgument, {"tensor 'token_embd.weight' has unknown ggml type 1234"}},
      {"RemovedGgmlType", Edited([](FileSpec& s) { s.tensors[0].type = 4; }),
       Code::kInvalidArgument, {"tensor 'token_embd.weight' has unknown ggml type 4"}},
      {"UnsupportedGgmlType", Edited([](FileSpec& s) { s.tensors[0].type = 16; }),
       Code::kUnimplemented,
       {"tensor 'token_embd.weight' has ggml type 16 (iq2_xxs)",
        "supported: f32, f16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, "
        "q6_K, bf16"}},
      {"RowNotMultipleOfBlock",
       Edited([](FileSpec& s) {
         s.tensors[0].ne = {33, 3};
         s.tensors[0].bytes = 34 * 3;
       }),
       Code::kInvalidArgument,
       {"tensor 'token_embd.weight' of type q8_0 has 33 elements per row (ne[0]), "
        "not a multiple of the block size 32"}},
      {"TensorCountPastEnd", OneTensor(U32(1)), Code::kOutOfRange,
       {"tensor_count 1 cannot fit in the 4 bytes left"}},
      {"TruncatedTensorNameLength",
       Header(3, 2, 0) + Str(lname) + U32(1) + U64(4) + f32 + U64(0) + U32(1),
       Code::kOutOfRange, {"truncated: tensor #1 name length"}},
      {"TensorNamePastEnd", OneTensor(U64(40) + "abc" + std::string(21, '\0')),
       Code::kOutOfRange, {"tensor #0 name length 40 runs past the end"}},
      {"TruncatedNDims", OneTensor(Str(lname) + U16(1)), Code::kOutOfRange,
       {"truncated: tensor '" + lname + "' n_dims"}},
      {"TruncatedDim", OneTensor(Str(lname) + U32(2) + U64(4) + U32(1)),
       Code::kOutOfRange, {"truncated: tensor '" + lname + "' ne[1]"}},
      {"TruncatedType", OneTensor(Str(lname) + U32(1) + U64(4) + U16(0)),
       Code::kOutOfRange, {"truncated: tensor '" + lname + "' type"}},
      {"TruncatedOffset", OneTensor(Str(lname) + U32(1) + U64(4) + f32 + U32(0)),
       Code::kOutOfRange, {"truncated: tensor '" + lname + "' offset"}},
      // Placement.
      {"MisalignedOffset", Edited([](FileSpec& s) { s.tensors[1].offset = 112; }),
       Code::kInvalidArgument,
       {"tensor 'output_norm.weight' offset 112 is not a multiple of the alignment 32"}},
      {"DataPastEndOfFile", valid.substr(0, valid.size() - 64), Code::kOutOfRange,
       {"tensor 'output.weight' data [256, 448)", "runs past the end of the 384-byte "
        "data section"}},
      {"OffsetNearUint64Max", Edited([](FileSpec& s) { s.tensors[2].offset = kU64Max - 31; }),
       Code::kOutOfRange, {"tensor 'output.weight' data [18446744073709551584, 2^64+)"}},
      {"Overlap", Edited([](FileSpec& s) { s.tensors[2].offset = 96; }),
       Code::kInvalidArgument,
       {"tensor 'output.weight' data [96, 288) overlaps tensor 'token_embd.weight' [0, 102)"}},
      {"SameOffset", Edited([](FileSpec& s) { s.tensors[1].offset = 0; }),
       Code::kInvalidArgument,
       {"tensor 'output_norm.weight' data [0, 128) overlaps tensor "
        "'token_embd.weight' [0, 102)"}},
      {"OutOfOrder",
       Edited([](FileSpec& s) {
         s.tensors[1].offset = 320;  // output.weight takes [128, 320)
         s.tensors[2].offset = 128;
       }),
       Code::kInvalidArgument,
       {"tensor 'output_norm.weight' has offset 320, expected 128",
        "stored in header order"}},
      {"HoleBetweenTensors", Edited([](FileSpec& s) { s.tensors[1].offset = 160; }),
       Code::kInvalidArgument, {"tensor 'output_norm.weight' has offset 160, expected 128"}},
  };
}

class GgufBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(GgufBadInputTest, IsRejectedWithSpecificCodeAndMessage) {
  const BadCase& c = GetParam();
  std::vector<::testing::Matcher<std::string>> parts = {::testing::StartsWith("m.gguf: ")};
  for (const std::string& s : c.fragments) parts.push_back(HasSubstr(s));
  EXPECT_THAT(Parse(c.bytes), StatusIs(c.code, ::testing::AllOfArray(parts)));
}

INSTANTIATE_TEST_SUITE_P(Corruptions, GgufBadInputTest, ::testing::ValuesIn(BadCases()),
                         [](const ::testing::TestParamInfo<BadCase>& info) {
                           return info.param.name;
                         });

// Every prefix that stops before the last tensor's data ends is refused as
// truncated (never a crash, never OK); prefixes inside its padding are fine.
TEST(GgufReaderTest, EveryTruncationIsOutOfRange) {
  FileSpec s = SmallValid();
  s.kvs.push_back({"a.f64", VArr(ValueType::kF64, 2, F64(1) + F64(2))});
  s.kvs.push_back({"a.bool", VBool(1)});
  const Built b = Build(s);
  const uint64_t data_end = b.data_offset + b.offsets.back() + 96 * 2;  // f16 [32, 3]
  for (uint64_t n = 0; n < data_end; ++n) {
    SCOPED_TRACE("prefix of " + std::to_string(n) + " bytes");
    EXPECT_THAT(Parse(b.bytes.substr(0, n)), StatusIs(Code::kOutOfRange, HasSubstr("m.gguf: ")));
  }
  EXPECT_THAT(Parse(b.bytes.substr(0, data_end)), IsOk());
  EXPECT_THAT(Parse(b.bytes), IsOk());
}

// Random byte flips in the header: any outcome but a crash or an ASan report.
// The buffer is an exact-size heap copy so ASan sees reads past its end.
TEST(GgufReaderTest, SurvivesRandomByteFlips) {
  const std::string valid = Build(SmallValid()).bytes;
  std::mt19937 rng(1234);
  int ok = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> bytes(valid.begin(), valid.end());
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      bytes[rng() % 200] = static_cast<uint8_t>(rng());  // header + infos
    }
    const size_t keep = rng() % 8 == 0 ? rng() % bytes.size() : bytes.size();
    std::unique_ptr<uint8_t[]> exact(new uint8_t[keep]);
    std::memcpy(exact.get(), bytes.data(), keep);
    auto f = ParseGguf(exact.get(), keep, "m.gguf");
    if (f.ok()) {
      ++ok;
      for (const TensorInfo& t : f->tensors) {
        if (t.n_bytes == 0) continue;
        ASSERT_LE(t.data + t.n_bytes, exact.get() + keep);  // inside the buffer
      }
    } else {
      EXPECT_THAT(std::string(f.status().message()), ::testing::StartsWith("m.gguf: "));
    }
  }
  EXPECT_GT(ok, 0);  // some flips land in tensor data or padding
}

}  // namespace
}  // namespace slimpack::gguf
