#include "support/strict_json.h"

#include <exception>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"

namespace slimpack::support {
namespace {

using nlohmann::json;

// Validating SAX handler: builds nothing, only tracks the object/array stack
// so that duplicate keys and excessive depth abort the parse early (before
// any DOM exists, so a nesting bomb never recurses or allocates much).
class GuardSax {
 public:
  explicit GuardSax(int max_depth) : max_depth_(max_depth) {}

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t&) {
    return true;
  }
  bool string(json::string_t&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool start_object(std::size_t) { return Push(/*is_object=*/true); }
  bool end_object() { return Pop(); }
  bool start_array(std::size_t) { return Push(/*is_object=*/false); }
  bool end_array() { return Pop(); }

  bool key(json::string_t& k) {
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second) {
      error_ = "duplicate key '" + k + "' in " + Where();
      return false;
    }
    f.current_key = k;
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    error_ =
        "not valid JSON (byte " + std::to_string(position) + "): " + ex.what();
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  struct Frame {
    bool is_object = false;
    std::unordered_set<std::string> keys;
    std::string current_key;
  };

  bool Push(bool is_object) {
    if (static_cast<int>(frames_.size()) >= max_depth_) {
      error_ = "JSON nested deeper than " + std::to_string(max_depth_) +
               " levels (at " + Where() + ")";
      return false;
    }
    frames_.push_back(Frame{is_object, {}, {}});
    return true;
  }

  bool Pop() {
    frames_.pop_back();
    return true;
  }

  // "top level", "object at /enc.0.w", "array at /enc.0.w/shape".
  std::string Where() const {
    if (frames_.size() <= 1) return "top-level object";
    std::string path;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      path += frames_[i].is_object ? "/" + frames_[i].current_key : "/[]";
    }
    return (frames_.back().is_object ? "object at " : "array at ") + path;
  }

  int max_depth_;
  std::vector<Frame> frames_;
  std::string error_;
};

// Length of the UTF-8 sequence starting at s[i], or 0 if ill-formed
// (Unicode Table 3-7, well-formed byte sequences).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  const size_t left = s.size() - i;
  if (c < 0x80) return 1;
  auto cont = [&](size_t k, unsigned char lo, unsigned char hi) {
    return k < left && b(k) >= lo && b(k) <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(1, 0x80, 0xBF) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;  // no overlongs
    unsigned char hi = c == 0xED ? 0x9F : 0xBF;  // no surrogates
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned char lo = c == 0xF0 ? 0x90 : 0x80;  // no overlongs
    unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;  // <= U+10FFFF
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4
                                                                         : 0;
  }
  return 0;
}

}  // namespace

std::optional<size_t> FindInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

absl::StatusOr<json> ParseStrictJson(std::string_view text,
                                     const std::string& what, int max_depth) {
  if (auto bad = FindInvalidUtf8(text)) {
    return absl::InvalidArgumentError(what + ": not valid UTF-8 at byte " +
                                      std::to_string(*bad));
  }
  // nlohmann reports errors through the SAX handler and the allow_exceptions
  // flag; the catch is only for allocation failure, so nothing escapes.
  try {
    GuardSax guard(max_depth);
    const char* begin = text.data();
    const char* end = text.data() + text.size();
    if (!json::sax_parse(begin, end, &guard)) {
      return absl::InvalidArgumentError(what + ": " + guard.error());
    }
    json value = json::parse(begin, end, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) {
      return absl::InvalidArgumentError(what + ": not valid JSON");
    }
    return value;
  } catch (const std::exception& e) {
    return absl::ResourceExhaustedError(what +
                                        ": JSON parse failed: " + e.what());
  }
}

std::string DescribeJson(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return v.get<bool>() ? "boolean true" : "boolean false";
    case json::value_t::number_integer:
      return "number " + std::to_string(v.get<int64_t>());
    case json::value_t::number_unsigned:
      return "number " + std::to_string(v.get<uint64_t>());
    case json::value_t::number_float: {
      // dump() never throws on numbers; keeps the shortest round-trip form.
      return "number " + v.dump();
    }
    case json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      return "string \"" + (s.size() > 40 ? s.substr(0, 40) + "..." : s) + "\"";
    }
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "unsupported JSON value";
  }
}

}  // namespace slimpack::support
