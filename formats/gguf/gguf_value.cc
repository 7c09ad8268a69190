// GGUF metadata values and lookups: the decoded view of what the parser
// (gguf_reader.cc) validated.
#include <iterator>

#include "formats/gguf/gguf_reader.h"
#include "formats/gguf/gguf_reader_internal.h"

namespace slimpack::gguf {
namespace internal {

uint64_t ScalarBytes(ValueType type) {
  switch (type) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kBool: return 1;
    case ValueType::kU16: case ValueType::kI16: return 2;
    case ValueType::kU32: case ValueType::kI32: case ValueType::kF32: return 4;
    case ValueType::kU64: case ValueType::kI64: case ValueType::kF64: return 8;
    case ValueType::kString: case ValueType::kArray: return 0;
  }
  return 0;
}

uint64_t LoadLE(const uint8_t* p, uint64_t n) {
  uint64_t v = 0;
  for (uint64_t i = n; i > 0; --i) v = (v << 8) | p[i - 1];
  return v;
}

std::string Quote(std::string_view s) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += "'";
  if (s.size() > kMaxShown) {
    out += "... (" + std::to_string(s.size()) + " bytes)";
  }
  return out;
}

}  // namespace internal

using internal::kValueTypeCount;
using internal::LoadLE;
using internal::Quote;
using internal::ScalarBytes;

std::string_view ValueTypeName(uint32_t type) {
  static constexpr std::string_view kNames[kValueTypeCount] = {
      "u8", "i8", "u16", "i16", "u32", "i32", "f32",
      "bool", "str", "arr", "u64", "i64", "f64"};
  return type < kValueTypeCount ? kNames[type] : "?";
}

std::string_view GgmlTypeName(uint32_t type) {
  // Values 4, 5, 31..33 and 36..38 were removed from ggml (their names stay
  // empty: no file may use them).
  static constexpr std::string_view kNames[] = {
      "f32",     "f16",    "q4_0",    "q4_1",  "",      "",      "q5_0",
      "q5_1",    "q8_0",   "q8_1",    "q2_K",  "q3_K",  "q4_K",  "q5_K",
      "q6_K",    "q8_K",   "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl",
      "iq3_s",   "iq2_s",  "iq4_xs",  "i8",    "i16",   "i32",   "i64",
      "f64",     "iq1_m",  "bf16",    "",      "",      "",      "tq1_0",
      "tq2_0",   "",       "",        "",      "mxfp4"};
  return type < std::size(kNames) ? kNames[type] : "";
}

// ---------------------------------------------------------------- Value

std::optional<uint64_t> Value::GetUInt(uint64_t i) const {
  auto v = GetInt(i);
  if (v && *v >= 0) return static_cast<uint64_t>(*v);
  // A u64 above INT64_MAX does not fit GetInt but is a fine uint.
  if (i < count_ && element_type_ == ValueType::kU64) {
    return LoadLE(raw_ + i * 8, 8);
  }
  return std::nullopt;
}

std::optional<int64_t> Value::GetInt(uint64_t i) const {
  if (i >= count_ || raw_ == nullptr) return std::nullopt;
  const uint64_t n = ScalarBytes(element_type_);
  const uint64_t bits = LoadLE(raw_ + i * n, n);
  switch (element_type_) {
    case ValueType::kU8: case ValueType::kU16: case ValueType::kU32:
      return static_cast<int64_t>(bits);
    case ValueType::kI8: return static_cast<int8_t>(bits);
    case ValueType::kI16: return static_cast<int16_t>(bits);
    case ValueType::kI32: return static_cast<int32_t>(bits);
    case ValueType::kI64: return static_cast<int64_t>(bits);
    case ValueType::kU64:
      if (bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::nullopt;
      }
      return static_cast<int64_t>(bits);
    default: return std::nullopt;
  }
}

std::optional<double> Value::GetFloat(uint64_t i) const {
  if (i >= count_ || raw_ == nullptr) return std::nullopt;
  if (element_type_ == ValueType::kF32) {
    const uint32_t bits = static_cast<uint32_t>(LoadLE(raw_ + i * 4, 4));
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  if (element_type_ == ValueType::kF64) {
    const uint64_t bits = LoadLE(raw_ + i * 8, 8);
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  return std::nullopt;
}

std::optional<bool> Value::GetBool(uint64_t i) const {
  if (i >= count_ || raw_ == nullptr || element_type_ != ValueType::kBool) {
    return std::nullopt;
  }
  return raw_[i] != 0;  // the parser admitted only 0 and 1
}

std::optional<std::string_view> Value::GetString(uint64_t i) const {
  if (element_type_ != ValueType::kString || i >= strings_.size()) {
    return std::nullopt;
  }
  return strings_[i];
}

std::string Value::Encoded() const {
  auto append_u64 = [](std::string& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  std::string out;
  if (is_array()) {
    const uint32_t elem = static_cast<uint32_t>(element_type_);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((elem >> (8 * i)) & 0xff));
    append_u64(out, count_);
  }
  if (element_type_ == ValueType::kString) {
    for (std::string_view s : strings_) {
      append_u64(out, s.size());
      out.append(s);
    }
  } else {
    // Numbers and bools stay in the file's little-endian bytes.
    out.append(reinterpret_cast<const char*>(raw_), count_ * ScalarBytes(element_type_));
  }
  return out;
}

std::string Value::Describe() const {
  const std::string elem(ValueTypeName(static_cast<uint32_t>(element_type_)));
  if (is_array()) return "arr[" + elem + "] of " + std::to_string(count_);
  if (auto str = GetString()) return "str " + Quote(*str);
  if (auto b = GetBool()) return std::string("bool ") + (*b ? "true" : "false");
  if (auto f = GetFloat()) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", *f);
    return elem + " " + buf;
  }
  if (auto u = GetUInt()) return elem + " " + std::to_string(*u);
  if (auto i = GetInt()) return elem + " " + std::to_string(*i);
  return elem;
}

// ---------------------------------------------------------------- GgufFile

const Value* GgufFile::FindValue(std::string_view key) const {
  auto it = key_index.find(key);
  return it == key_index.end() ? nullptr : &metadata[it->second].value;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index.find(name);
  return it == tensor_index.end() ? nullptr : &tensors[it->second];
}

}  // namespace slimpack::gguf
