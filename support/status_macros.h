// Status propagation macros shaped like Abseil's (ABSL_RETURN_IF_ERROR /
// ABSL_ASSIGN_OR_RETURN), which Debian 12's Abseil 20220623 does not ship.
// Switching to the Abseil versions later is a rename.
#ifndef SLIMPACK_SUPPORT_STATUS_MACROS_H_
#define SLIMPACK_SUPPORT_STATUS_MACROS_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace slimpack {

// Returns `status` with `context + ": "` prepended to its message, keeping the
// code. Used to add one layer of context (file -> tensor -> field).
absl::Status Annotate(const absl::Status& status, const std::string& context);

}  // namespace slimpack

#define SLIMPACK_STATUS_CONCAT_INNER_(a, b) a##b
#define SLIMPACK_STATUS_CONCAT_(a, b) SLIMPACK_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status); returns it from the enclosing function
// if it is not OK.
#define RETURN_IF_ERROR(expr)                                        \
  do {                                                               \
    ::absl::Status slimpack_status_ = (expr);                        \
    if (!slimpack_status_.ok()) return slimpack_status_;             \
  } while (0)

// ASSIGN_OR_RETURN(lhs, rexpr): evaluates `rexpr` (an absl::StatusOr<T>);
// on error returns its status, otherwise moves the value into `lhs`, which
// may be a declaration (`auto x`) or an existing variable.
#define ASSIGN_OR_RETURN(lhs, rexpr)                                        \
  SLIMPACK_ASSIGN_OR_RETURN_IMPL_(                                          \
      SLIMPACK_STATUS_CONCAT_(slimpack_statusor_, __LINE__), lhs, rexpr)

#define SLIMPACK_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                    \
  if (!statusor.ok()) return std::move(statusor).status();    \
  lhs = std::move(statusor).value()

#endif  // SLIMPACK_SUPPORT_STATUS_MACROS_H_
