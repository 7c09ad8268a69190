// Strict JSON for untrusted headers, indexes and configs: invalid UTF-8,
// duplicate keys and nesting bombs are rejected before nlohmann builds a DOM
// (nlohmann would silently keep the last of two duplicate keys).
#ifndef SLIMPACK_SUPPORT_STRICT_JSON_H_
#define SLIMPACK_SUPPORT_STRICT_JSON_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace slimpack::support {

// Byte offset of the first byte that does not start a well-formed UTF-8
// sequence (overlong forms, surrogates and code points above U+10FFFF are
// ill-formed), or nullopt if `s` is valid UTF-8.
std::optional<size_t> FindInvalidUtf8(std::string_view s);

// Parses `text` as one JSON value. `what` prefixes every error (e.g.
// "model.safetensors: header"). Returns InvalidArgument for invalid UTF-8
// (with its byte offset), a syntax error (with nlohmann's position), a
// duplicate key in any object (naming the key and where it is), or nesting
// deeper than `max_depth` arrays/objects. Never throws.
absl::StatusOr<nlohmann::json> ParseStrictJson(std::string_view text,
                                               const std::string& what,
                                               int max_depth);

// Short description of a JSON value's type and value for error messages:
// "number -4", "string \"x\"", "array", ...
std::string DescribeJson(const nlohmann::json& v);

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_STRICT_JSON_H_
