// Recursive-descent strict JSON parser writing a flat tape of nodes.
// Recursion is bounded by the depth limit, so hostile nesting cannot
// overflow the stack.
#include "formats/shard/loader/json_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace slimpack::loader {
namespace {

// Key comparison tuned for short manifest keys: length, then the first and
// last bytes (which already tell "shape" from "shard" or "dtype"), then the
// rest, without a memcmp call.
inline bool KeyEquals(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  if (n == 0) return true;
  if (a[0] != b[0] || a[n - 1] != b[n - 1]) return false;
  for (size_t i = 1; i + 1 < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

const JsonValue* JsonValue::Find(std::string_view key) const {
  const uint32_t sig = KeySignature(key);
  for (const JsonValue& m : members()) {
    if (m.key_signature_ == sig && KeyEquals(m.key_, key)) return &m;
  }
  return nullptr;
}

const char* JsonValue::TypeName(Type t) {
  switch (t) {
    case Type::kNull: return "null";
    case Type::kBool: return "boolean";
    case Type::kInt: return "integer";
    case Type::kDouble: return "number";
    case Type::kString: return "string";
    case Type::kArray: return "array";
    case Type::kObject: return "object";
  }
  return "?";
}

class JsonParser {
 public:
  JsonParser(std::string_view text, const JsonLimits& limits)
      : text_(text), limits_(limits) {}

  Result<JsonDocument> ParseDocument() {
    if (text_.size() > UINT32_MAX) {
      return ResourceExhaustedError("JSON text larger than 4 GiB");
    }
    if (text_.size() >= 3 && static_cast<uint8_t>(text_[0]) == 0xEF &&
        static_cast<uint8_t>(text_[1]) == 0xBB &&
        static_cast<uint8_t>(text_[2]) == 0xBF) {
      return Error("starts with a UTF-8 byte order mark, which JSON forbids");
    }
    JsonDocument doc;
    doc_ = &doc;
    // About one value per 16 bytes of pretty-printed manifest.
    doc.nodes_.reserve(text_.size() / 16 + 16);
    SkipSpace();
    if (!ParseValue(0)) return std::move(error_);
    SkipSpace();
    if (pos_ != text_.size()) {
      return Error("unexpected data after the end of the JSON value");
    }
    return doc;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }
  JsonValue& Node(size_t i) { return doc_->nodes_[i]; }

  void SkipSpace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
      ++pos_;
    }
  }

  Status Error(const std::string& what, StatusCode code =
                                            StatusCode::kInvalidArgument) {
    size_t at = std::min(pos_, text_.size());
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at; ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return Status(code, "JSON error at byte " + std::to_string(at) + " (line " +
                            std::to_string(line) + ", column " +
                            std::to_string(col) + "): " + what);
  }

  bool Fail(const std::string& what,
            StatusCode code = StatusCode::kInvalidArgument) {
    if (error_.ok()) error_ = Error(what, code);
    return false;
  }

  // Appends the value at pos_ (and its subtree) to the tape.
  bool ParseValue(int depth) {
    if (AtEnd()) return Fail("unexpected end of input, expected a value");
    const size_t index = doc_->nodes_.size();
    doc_->nodes_.emplace_back();
    JsonValue* out = &Node(index);
    out->begin_ = static_cast<uint32_t>(pos_);
    bool ok;
    switch (Peek()) {
      case '{': ok = ParseObject(index, depth + 1); break;
      case '[': ok = ParseArray(index, depth + 1); break;
      case '"':
        out->type_ = JsonValue::Type::kString;
        ok = ParseString(&out->string_);
        break;
      case 't': ok = ParseLiteral("true", out, JsonValue::Type::kBool, true); break;
      case 'f': ok = ParseLiteral("false", out, JsonValue::Type::kBool, false); break;
      case 'n': ok = ParseLiteral("null", out, JsonValue::Type::kNull, false); break;
      default:
        if (Peek() == '-' || (Peek() >= '0' && Peek() <= '9')) {
          ok = ParseNumber(out);
        } else {
          // Covers NaN, Infinity, single quotes and the like.
          ok = Fail(std::string("unexpected character '") + Printable(Peek()) +
                    "', expected a value");
        }
    }
    // Containers grew the tape: refetch the node.
    Node(index).end_ = static_cast<uint32_t>(pos_);
    return ok;
  }

  static std::string Printable(char c) {
    auto u = static_cast<uint8_t>(c);
    if (u >= 0x20 && u < 0x7F) return std::string(1, c);
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\x%02x", u);
    return buf;
  }

  bool ParseLiteral(std::string_view word, JsonValue* out, JsonValue::Type t,
                    bool b) {
    if (text_.substr(pos_, word.size()) != word) {
      return Fail("invalid literal, expected '" + std::string(word) + "'");
    }
    pos_ += word.size();
    out->type_ = t;
    out->bool_ = b;
    return true;
  }

  bool ParseNumber(JsonValue* out) {
    size_t start = pos_;
    bool negative = false;
    if (Peek() == '-') {
      negative = true;
      ++pos_;
    }
    if (AtEnd() || !IsDigit(Peek())) return Fail("a '-' must be followed by digits");
    if (Peek() == '0' && pos_ + 1 < text_.size() && IsDigit(text_[pos_ + 1])) {
      return Fail("numbers must not have leading zeros");
    }
    uint64_t magnitude = 0;
    bool overflow = false;
    while (!AtEnd() && IsDigit(Peek())) {
      uint64_t digit = static_cast<uint64_t>(Peek() - '0');
      if (magnitude > (UINT64_MAX - digit) / 10) overflow = true;
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    bool is_integer = true;
    if (!AtEnd() && Peek() == '.') {
      is_integer = false;
      ++pos_;
      if (AtEnd() || !IsDigit(Peek())) return Fail("a '.' must be followed by digits");
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
    }
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      is_integer = false;
      ++pos_;
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) ++pos_;
      if (AtEnd() || !IsDigit(Peek())) return Fail("an exponent must have digits");
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
    }
    if (is_integer) {
      const uint64_t limit = negative ? (1ull << 63) : (1ull << 63) - 1;
      if (overflow || magnitude > limit) {
        pos_ = start;
        return Fail("integer " + std::string(text_.substr(start, 24)) +
                    " does not fit in 64 bits");
      }
      out->type_ = JsonValue::Type::kInt;
      out->int_ = negative ? static_cast<int64_t>(0 - magnitude)
                           : static_cast<int64_t>(magnitude);
      return true;
    }
    double d = 0;
    auto [ptr, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, d);
    if (ec != std::errc() || ptr != text_.data() + pos_ || !std::isfinite(d)) {
      pos_ = start;
      return Fail("number is out of the range of a double");
    }
    out->type_ = JsonValue::Type::kDouble;
    out->double_ = d;
    return true;
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  static int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  bool ParseHex4(uint32_t* out) {
    if (pos_ + 4 > text_.size()) return Fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      int h = HexValue(text_[pos_ + i]);
      if (h < 0) return Fail("invalid hex digit in \\u escape");
      v = (v << 4) | static_cast<uint32_t>(h);
    }
    pos_ += 4;
    *out = v;
    return true;
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // Length of the valid UTF-8 sequence at pos_ (lead byte >= 0x80), or 0.
  // Rejects overlong forms, surrogates and code points above U+10FFFF.
  size_t Utf8SequenceLength() const {
    auto at = [&](size_t i) -> uint8_t {
      return pos_ + i < text_.size() ? static_cast<uint8_t>(text_[pos_ + i]) : 0;
    };
    auto cont = [](uint8_t b) { return (b & 0xC0) == 0x80; };
    uint8_t b0 = at(0), b1 = at(1);
    if (b0 >= 0xC2 && b0 <= 0xDF) return cont(b1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
      if (!cont(b1) || !cont(at(2))) return 0;
      if (b0 == 0xE0 && b1 < 0xA0) return 0;   // overlong
      if (b0 == 0xED && b1 >= 0xA0) return 0;  // UTF-16 surrogate
      return 3;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
      if (!cont(b1) || !cont(at(2)) || !cont(at(3))) return 0;
      if (b0 == 0xF0 && b1 < 0x90) return 0;  // overlong
      if (b0 == 0xF4 && b1 >= 0x90) return 0;  // above U+10FFFF
      return 4;
    }
    return 0;
  }

  // Strings without escapes become views into the text; the first escape
  // switches to a decoded copy owned by the document.
  bool ParseString(std::string_view* out) {
    ++pos_;  // opening quote
    const size_t start = pos_;
    std::string* decoded = nullptr;
    while (true) {
      // Fast path: skip a run of plain ASCII.
      size_t run = pos_;
      while (run < text_.size()) {
        auto c = static_cast<uint8_t>(text_[run]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++run;
      }
      if (decoded != nullptr) decoded->append(text_.data() + pos_, run - pos_);
      pos_ = run;
      if (AtEnd()) return Fail("unterminated string");
      auto c = static_cast<uint8_t>(Peek());
      if (c == '"') {
        *out = decoded != nullptr ? std::string_view(*decoded)
                                  : text_.substr(start, pos_ - start);
        ++pos_;
        return true;
      }
      if (c < 0x20) {
        return Fail("unescaped control character " + Printable(Peek()) +
                    " in string");
      }
      if (c >= 0x80) {
        size_t n = Utf8SequenceLength();
        if (n == 0) return Fail("invalid UTF-8 byte " + Printable(Peek()));
        if (decoded != nullptr) decoded->append(text_.data() + pos_, n);
        pos_ += n;
        continue;
      }
      // Escape.
      if (decoded == nullptr) {
        decoded = &doc_->decoded_.emplace_back(text_.substr(start, pos_ - start));
      }
      ++pos_;
      if (AtEnd()) return Fail("unterminated escape");
      char e = Peek();
      ++pos_;
      switch (e) {
        case '"': decoded->push_back('"'); break;
        case '\\': decoded->push_back('\\'); break;
        case '/': decoded->push_back('/'); break;
        case 'b': decoded->push_back('\b'); break;
        case 'f': decoded->push_back('\f'); break;
        case 'n': decoded->push_back('\n'); break;
        case 'r': decoded->push_back('\r'); break;
        case 't': decoded->push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          if (!ParseHex4(&cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return Fail("unpaired low surrogate in \\u escape");
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") {
              return Fail("unpaired high surrogate in \\u escape");
            }
            pos_ += 2;
            uint32_t lo;
            if (!ParseHex4(&lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) {
              return Fail("high surrogate not followed by a low surrogate");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(cp, decoded);
          break;
        }
        default:
          --pos_;
          return Fail("invalid escape '\\" + Printable(e) + "'");
      }
    }
  }

  bool EnterContainer(int depth) {
    if (depth > limits_.max_depth) {
      return Fail("nesting deeper than the limit of " +
                      std::to_string(limits_.max_depth),
                  StatusCode::kResourceExhausted);
    }
    ++pos_;
    SkipSpace();
    return true;
  }

  // Closes the container at `index`: its children are the nodes after it.
  void CloseContainer(size_t index, uint32_t count) {
    JsonValue& c = Node(index);
    c.count_ = count;
    c.skip_ = static_cast<uint32_t>(doc_->nodes_.size() - index);
    ++pos_;
  }

  bool ParseArray(size_t index, int depth) {
    Node(index).type_ = JsonValue::Type::kArray;
    if (!EnterContainer(depth)) return false;
    uint32_t count = 0;
    if (!AtEnd() && Peek() == ']') {
      CloseContainer(index, 0);
      return true;
    }
    while (true) {
      if (!ParseValue(depth)) return false;
      ++count;
      SkipSpace();
      if (AtEnd()) return Fail("unterminated array");
      if (Peek() == ',') {
        ++pos_;
        SkipSpace();
        continue;
      }
      if (Peek() == ']') {
        CloseContainer(index, count);
        return true;
      }
      return Fail("expected ',' or ']' in array");
    }
  }

  bool ParseObject(size_t index, int depth) {
    Node(index).type_ = JsonValue::Type::kObject;
    if (!EnterContainer(depth)) return false;
    uint32_t count = 0;
    if (!AtEnd() && Peek() == '}') {
      CloseContainer(index, 0);
      return true;
    }
    while (true) {
      if (AtEnd() || Peek() != '"') return Fail("expected a string key in object");
      const size_t key_pos = pos_;
      std::string_view key;
      if (!ParseString(&key)) return false;
      if (count < kLinearKeyCheck && HasKey(index, count, key)) {
        pos_ = key_pos;
        return Fail("duplicate key \"" + std::string(key) + "\"");
      }
      SkipSpace();
      if (AtEnd() || Peek() != ':') return Fail("expected ':' after object key");
      ++pos_;
      SkipSpace();
      const size_t member = doc_->nodes_.size();
      if (!ParseValue(depth)) return false;
      Node(member).key_ = key;
      Node(member).key_signature_ = JsonValue::KeySignature(key);
      ++count;
      SkipSpace();
      if (AtEnd()) return Fail("unterminated object");
      if (Peek() == ',') {
        ++pos_;
        SkipSpace();
        continue;
      }
      if (Peek() == '}') {
        CloseContainer(index, count);
        return CheckLargeObjectKeys(index);
      }
      return Fail("expected ',' or '}' in object");
    }
  }

  // Manifest objects have a handful of keys, so a linear scan per key beats
  // hashing. Past kLinearKeyCheck keys that would be quadratic (a hostile
  // 16 MiB object), so large objects are checked once, sorted, at their end.
  static constexpr uint32_t kLinearKeyCheck = 32;

  // Whether one of the first `count` members of the (still open) object at
  // `index` has `key`.
  bool HasKey(size_t index, uint32_t count, std::string_view key) {
    const uint32_t sig = JsonValue::KeySignature(key);
    size_t i = index + 1;
    for (uint32_t n = 0; n < count; ++n) {
      const JsonValue& m = Node(i);
      if (m.key_signature_ == sig && KeyEquals(m.key_, key)) return true;
      i += m.skip_;
    }
    return false;
  }

  bool CheckLargeObjectKeys(size_t index) {
    const JsonValue& obj = Node(index);
    if (obj.count_ <= kLinearKeyCheck) return true;
    std::vector<std::string_view> keys;
    keys.reserve(obj.count_);
    for (const JsonValue& m : obj.members()) keys.push_back(m.key_);
    std::sort(keys.begin(), keys.end());
    for (size_t i = 1; i < keys.size(); ++i) {
      if (keys[i] == keys[i - 1]) {
        pos_ = obj.begin_;
        return Fail("duplicate key \"" + std::string(keys[i]) +
                    "\" in the object starting here");
      }
    }
    return true;
  }

  std::string_view text_;
  JsonLimits limits_;
  size_t pos_ = 0;
  Status error_;
  JsonDocument* doc_ = nullptr;
};

Result<JsonDocument> ParseJson(std::string_view text, const JsonLimits& limits) {
  JsonParser parser(text, limits);
  return parser.ParseDocument();
}

}  // namespace slimpack::loader
