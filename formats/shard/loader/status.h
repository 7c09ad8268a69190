// Status and Result<T> for the standalone loader, which must not depend on
// Abseil. Codes have absl::StatusCode's numeric values, so absl_adapter.h
// converts without a table and the C API returns the same numbers.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_STATUS_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_STATUS_H_

#include <optional>
#include <string>
#include <utility>

namespace slimpack::loader {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 3,
  kNotFound = 5,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kDataLoss = 15,
};

// "INVALID_ARGUMENT", ... (absl's spelling).
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;
  // Same code, message prefixed with `context + ": "`.
  Status Annotate(const std::string& context) const;
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
inline Status PermissionDeniedError(std::string m) {
  return Status(StatusCode::kPermissionDenied, std::move(m));
}
inline Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status OutOfRangeError(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}
inline Status UnimplementedError(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
inline Status InternalError(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}
inline Status DataLossError(std::string m) {
  return Status(StatusCode::kDataLoss, std::move(m));
}

// A value or a non-OK Status (absl::StatusOr look-alike).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = InternalError("Result built from OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }
  // Only valid when ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace slimpack::loader

#define SLP_CONCAT_INNER_(a, b) a##b
#define SLP_CONCAT_(a, b) SLP_CONCAT_INNER_(a, b)

// Loader-local spellings of RETURN_IF_ERROR / ASSIGN_OR_RETURN, prefixed so a
// translation unit can include both this and support/status_macros.h.
#define SLP_RETURN_IF_ERROR(expr)                            \
  do {                                                       \
    ::slimpack::loader::Status slp_status_ = (expr);         \
    if (!slp_status_.ok()) return slp_status_;               \
  } while (0)

#define SLP_ASSIGN_OR_RETURN(lhs, rexpr) \
  SLP_ASSIGN_OR_RETURN_IMPL_(SLP_CONCAT_(slp_result_, __LINE__), lhs, rexpr)
#define SLP_ASSIGN_OR_RETURN_IMPL_(result, lhs, rexpr) \
  auto result = (rexpr);                               \
  if (!result.ok()) return std::move(result).status(); \
  lhs = std::move(result).value()

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_STATUS_H_
