// Converts loader Status/Result to absl::Status/StatusOr for converter code
// (writer round-trip tests, `slimpack inspect`). Header-only and not part of
// the slimpack_loader target, which never sees Abseil.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_ABSL_ADAPTER_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_ABSL_ADAPTER_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "formats/shard/loader/status.h"

namespace slimpack::loader {

// Codes share absl's numbering (status.h), so the cast is exact.
inline absl::Status ToAbslStatus(const Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.code()), s.message());
}

template <typename T>
absl::StatusOr<T> ToAbslStatusOr(Result<T> r) {
  if (!r.ok()) return ToAbslStatus(r.status());
  return std::move(r).value();
}

}  // namespace slimpack::loader

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_ABSL_ADAPTER_H_
