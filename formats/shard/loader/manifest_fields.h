// Typed access to the keys of one manifest JSON object, with errors that
// name the file, the object (e.g. "tensors[3] 'w1'"), the key, and what was
// expected vs found. Internal to the loader.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_FIELDS_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_FIELDS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "formats/shard/loader/json_reader.h"
#include "formats/shard/loader/status.h"

namespace slimpack::loader::internal {

// Where an object sits in the manifest. The description is built only when
// an error is reported, so the success path allocates nothing for it.
struct ObjectPath {
  const std::string* file = nullptr;  // "…/manifest.json"
  std::string_view parent;            // "tensors", "shards", "model.onnx"...
  int64_t index = -1;                 // array position, or -1
  std::string_view name = {};         // the object's own name, once known
  const ObjectPath* outer = nullptr;  // enclosing path for nested objects

  // "manifest.json: tensors[3] 'w1'".
  std::string Describe() const;
};

class Fields {
 public:
  Fields(const JsonValue& object, const ObjectPath& path);

  const JsonValue& object() const { return object_; }
  const ObjectPath& path() const { return path_; }

  // InvalidArgument "<path>: <key>: <message>" (or another code).
  Status Error(std::string_view key, const std::string& message,
               StatusCode code = StatusCode::kInvalidArgument) const;

  // nullptr if absent.
  const JsonValue* Optional(std::string_view key) const;
  // The member, or InvalidArgument "missing required key".
  Result<const JsonValue*> Required(std::string_view key) const;
  Result<const JsonValue*> RequiredOf(std::string_view key,
                                      JsonValue::Type type) const;

  Result<std::string> String(std::string_view key) const;
  // Same, as a view into the parsed text (no copy).
  Result<std::string_view> StringView(std::string_view key) const;
  // Optional string; `fallback` when absent.
  Result<std::string> OptionalString(std::string_view key,
                                     std::string fallback) const;
  Result<bool> Bool(std::string_view key) const;
  // Any int64 integer.
  Result<int64_t> Int(std::string_view key) const;
  // An integer in [0, 2^53] (offsets, sizes, dims, indices).
  Result<uint64_t> SafeUint(std::string_view key) const;
  // A finite number.
  Result<double> Number(std::string_view key) const;
  // 64 lowercase hex digits.
  Result<std::string> Sha256Hex(std::string_view key) const;

 private:
  Status TypeError(std::string_view key, const char* expected,
                   const JsonValue& found) const;

  // Members of small objects, for lookups that compare one integer per
  // member instead of walking the tape: a tensor entry is queried about 20
  // times, and Artifact::Open is dominated by these lookups.
  static constexpr size_t kCacheSize = 16;
  struct Entry {
    uint32_t signature;
    std::string_view key;
    const JsonValue* value;
  };

  const JsonValue& object_;
  const ObjectPath& path_;
  Entry cache_[kCacheSize];
  size_t cached_ = 0;
  bool use_cache_ = false;
};

// Checks one already-fetched value as an integer in [0, 2^53]. `what`
// (with "[index]" appended when index >= 0) names it in the message, which
// is only built on failure: this runs for every dim of every tensor.
Status CheckSafeUint(const JsonValue& v, std::string_view what, uint64_t* out,
                     int64_t index = -1);

// Describes a JSON value for "found ..." messages: "string \"abc\"",
// "number 1.5", "integer -3".
std::string DescribeValue(const JsonValue& v);

}  // namespace slimpack::loader::internal

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_FIELDS_H_
