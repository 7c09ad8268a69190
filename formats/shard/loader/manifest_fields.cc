// Typed manifest field access with descriptive errors.
#include "formats/shard/loader/manifest_fields.h"

#include <cstdio>

#include "formats/shard/format.h"

namespace slimpack::loader::internal {

std::string ObjectPath::Describe() const {
  std::string out;
  if (outer != nullptr) {
    out = outer->Describe();
  } else if (file != nullptr) {
    out = *file + ":";
  }
  if (!parent.empty()) {
    out += out.empty() || out.back() == ':' ? " " : ".";
    out += std::string(parent);
  }
  if (index >= 0) out += "[" + std::to_string(index) + "]";
  if (!name.empty()) out += " '" + std::string(name) + "'";
  return out;
}

std::string DescribeValue(const JsonValue& v) {
  switch (v.type()) {
    case JsonValue::Type::kNull: return "null";
    case JsonValue::Type::kBool: return v.bool_value() ? "true" : "false";
    case JsonValue::Type::kInt: return "integer " + std::to_string(v.int_value());
    case JsonValue::Type::kDouble: {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "number %.17g", v.number_value());
      return buf;
    }
    case JsonValue::Type::kString: {
      std::string s(v.string_value().substr(0, 64));
      return "string \"" + s + (v.string_value().size() > 64 ? "...\"" : "\"");
    }
    case JsonValue::Type::kArray: return "an array";
    case JsonValue::Type::kObject: return "an object";
  }
  return "?";
}

Status CheckSafeUint(const JsonValue& v, std::string_view what_name,
                     uint64_t* out, int64_t index) {
  // shard::IsManifestUint is the rule the writer checks before writing.
  if (v.is_int() && shard::IsManifestUint(v.int_value())) {
    *out = static_cast<uint64_t>(v.int_value());
    return OkStatus();
  }
  std::string what(what_name);
  if (index >= 0) what += "[" + std::to_string(index) + "]";
  if (!v.is_int()) {
    return InvalidArgumentError(what + ": expected an integer in [0, 2^53], found " +
                                DescribeValue(v));
  }
  return InvalidArgumentError(what + ": " + std::to_string(v.int_value()) +
                              " is outside [0, 2^53]");
}

Fields::Fields(const JsonValue& object, const ObjectPath& path)
    : object_(object), path_(path) {
  if (!object.is_object() || object.size() > kCacheSize) return;
  for (const JsonValue& m : object.members()) {
    cache_[cached_++] = Entry{m.key_signature(), m.key(), &m};
  }
  use_cache_ = true;
}

const JsonValue* Fields::Optional(std::string_view key) const {
  if (!use_cache_) return object_.Find(key);
  const uint32_t sig = JsonValue::KeySignature(key);
  for (size_t i = 0; i < cached_; ++i) {
    if (cache_[i].signature == sig && cache_[i].key == key) return cache_[i].value;
  }
  return nullptr;
}

Status Fields::Error(std::string_view key, const std::string& message,
                     StatusCode code) const {
  std::string where = path_.Describe();
  if (!key.empty()) where += (where.empty() ? "" : " ") + std::string(key);
  return Status(code, where + ": " + message);
}

Status Fields::TypeError(std::string_view key, const char* expected,
                         const JsonValue& found) const {
  return Error(key, std::string("expected ") + expected + ", found " +
                        DescribeValue(found));
}

Result<const JsonValue*> Fields::Required(std::string_view key) const {
  const JsonValue* v = Optional(key);
  if (v == nullptr) return Error(key, "missing required key");
  return v;
}

Result<const JsonValue*> Fields::RequiredOf(std::string_view key,
                                            JsonValue::Type type) const {
  SLP_ASSIGN_OR_RETURN(const JsonValue* v, Required(key));
  if (v->type() != type) {
    const char* expected = JsonValue::TypeName(type);
    return TypeError(key, expected, *v);
  }
  return v;
}

Result<std::string> Fields::String(std::string_view key) const {
  SLP_ASSIGN_OR_RETURN(const JsonValue* v,
                       RequiredOf(key, JsonValue::Type::kString));
  return std::string(v->string_value());
}

Result<std::string_view> Fields::StringView(std::string_view key) const {
  SLP_ASSIGN_OR_RETURN(const JsonValue* v,
                       RequiredOf(key, JsonValue::Type::kString));
  return v->string_value();
}

Result<std::string> Fields::OptionalString(std::string_view key,
                                           std::string fallback) const {
  const JsonValue* v = Optional(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) return TypeError(key, "a string", *v);
  return std::string(v->string_value());
}

Result<bool> Fields::Bool(std::string_view key) const {
  SLP_ASSIGN_OR_RETURN(const JsonValue* v, RequiredOf(key, JsonValue::Type::kBool));
  return v->bool_value();
}

Result<int64_t> Fields::Int(std::string_view key) const {
  SLP_ASSIGN_OR_RETURN(const JsonValue* v, Required(key));
  if (!v->is_int()) return TypeError(key, "an integer", *v);
  return v->int_value();
}

Result<uint64_t> Fields::SafeUint(std::string_view key) const {
  SLP_ASSIGN_OR_RETURN(const JsonValue* v, Required(key));
  uint64_t out = 0;
  Status s = CheckSafeUint(*v, key, &out);
  if (!s.ok()) {
    std::string where = path_.Describe();
    return Status(s.code(), where + " " + s.message());
  }
  return out;
}

Result<double> Fields::Number(std::string_view key) const {
  SLP_ASSIGN_OR_RETURN(const JsonValue* v, Required(key));
  if (!v->is_number()) return TypeError(key, "a number", *v);
  return v->number_value();
}

Result<std::string> Fields::Sha256Hex(std::string_view key) const {
  SLP_ASSIGN_OR_RETURN(std::string s, String(key));
  bool ok = s.size() == 64;
  for (char c : s) {
    ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  }
  if (!ok) {
    return Error(key, "expected 64 lowercase hex digits, found \"" +
                          s.substr(0, 80) + "\"");
  }
  return s;
}

}  // namespace slimpack::loader::internal
