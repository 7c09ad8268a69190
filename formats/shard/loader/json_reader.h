// A small strict JSON (RFC 8259) reader for the manifest: no BOM, valid
// UTF-8 only, no duplicate keys, bounded depth, exact 64-bit integers, no
// NaN/Infinity. Never throws.
//
// The result is a flat "tape": every value is one fixed-size node in a single
// vector, in document order, with strings as views into the parsed text (or
// into the document, for strings with escapes). Parsing a manifest thus costs
// a handful of allocations in total, which is what keeps Artifact::Open under
// a millisecond for a thousand tensors.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_JSON_READER_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_JSON_READER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "formats/shard/loader/status.h"

namespace slimpack::loader {

// One value inside a JsonDocument. Only ever used by reference, in place:
// children are found by position in the document's node vector.
class JsonValue {
 public:
  enum class Type : uint8_t {
    kNull, kBool, kInt, kDouble, kString, kArray, kObject
  };

  // Forward iteration over the children of an array or object.
  class Children {
   public:
    class Iterator {
     public:
      explicit Iterator(const JsonValue* p) : p_(p) {}
      const JsonValue& operator*() const { return *p_; }
      const JsonValue* operator->() const { return p_; }
      Iterator& operator++() {
        p_ += p_->skip_;
        return *this;
      }
      bool operator!=(const Iterator& o) const { return p_ != o.p_; }
      bool operator==(const Iterator& o) const { return p_ == o.p_; }

     private:
      const JsonValue* p_;
    };
    Iterator begin() const { return Iterator(parent_ + 1); }
    Iterator end() const { return Iterator(parent_ + parent_->skip_); }
    size_t size() const { return parent_->count_; }
    bool empty() const { return parent_->count_ == 0; }

   private:
    friend class JsonValue;
    explicit Children(const JsonValue* parent) : parent_(parent) {}
    const JsonValue* parent_;
  };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  // A number written without fraction or exponent that fits int64.
  bool is_int() const { return type_ == Type::kInt; }
  // Any other (finite) number.
  bool is_double() const { return type_ == Type::kDouble; }
  bool is_number() const { return is_int() || is_double(); }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  bool bool_value() const { return bool_; }
  int64_t int_value() const { return int_; }
  // The value of any number as a double.
  double number_value() const {
    return is_int() ? static_cast<double>(int_) : double_;
  }
  // Valid while the parsed text and the JsonDocument live.
  std::string_view string_value() const { return string_; }
  // For a member of an object: its key, and KeySignature(key()).
  std::string_view key() const { return key_; }
  uint32_t key_signature() const { return key_signature_; }
  // Length, first and last byte of a key packed in 32 bits: tells most
  // manifest keys apart with one integer compare.
  static uint32_t KeySignature(std::string_view key) {
    if (key.empty()) return 0;
    return static_cast<uint32_t>(key.size() & 0xFFFF) |
           (static_cast<uint32_t>(static_cast<uint8_t>(key.front())) << 16) |
           (static_cast<uint32_t>(static_cast<uint8_t>(key.back())) << 24);
  }

  // Children of an array (items) or object (members, each with key()).
  Children items() const { return Children(this); }
  Children members() const { return Children(this); }
  size_t size() const { return count_; }
  // The member named `key`, or nullptr. Linear: manifest objects are small.
  const JsonValue* Find(std::string_view key) const;

  // Byte range [begin, end) of this value in the parsed text; for strings it
  // includes the quotes.
  size_t begin_offset() const { return begin_; }
  size_t end_offset() const { return end_; }

  // "null", "boolean", "integer", "number", "string", "array", "object".
  static const char* TypeName(Type t);

 private:
  friend class JsonParser;
  Type type_ = Type::kNull;
  bool bool_ = false;
  uint32_t count_ = 0;  // children
  uint32_t skip_ = 1;   // nodes in this subtree, itself included
  uint32_t begin_ = 0;
  uint32_t end_ = 0;
  uint32_t key_signature_ = 0;
  union {
    int64_t int_ = 0;
    double double_;
  };
  std::string_view string_;
  std::string_view key_;
};

// The parse result: owns the nodes and the strings that had escapes, and
// refers to the parsed text, which must outlive it. Moving it keeps every
// view and reference into it valid.
class JsonDocument {
 public:
  JsonDocument() = default;
  // Move-only: a copy's views would point into the original's strings.
  JsonDocument(const JsonDocument&) = delete;
  JsonDocument& operator=(const JsonDocument&) = delete;
  JsonDocument(JsonDocument&&) = default;
  JsonDocument& operator=(JsonDocument&&) = default;

  const JsonValue& root() const { return nodes_.front(); }

 private:
  friend class JsonParser;
  std::vector<JsonValue> nodes_;
  std::deque<std::string> decoded_;
};

struct JsonLimits {
  int max_depth = 64;  // nesting of arrays and objects
};

// Parses `text` (at most 4 GiB) as one JSON value with nothing but
// whitespace after it. InvalidArgument naming the byte offset, line and
// column for any syntax error, invalid UTF-8, BOM, duplicate key or
// out-of-range number; ResourceExhausted if nesting exceeds
// `limits.max_depth`.
Result<JsonDocument> ParseJson(std::string_view text,
                               const JsonLimits& limits = {});

}  // namespace slimpack::loader

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_JSON_READER_H_
