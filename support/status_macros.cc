#include "support/status_macros.h"

namespace slimpack {

absl::Status Annotate(const absl::Status& status, const std::string& context) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      context + ": " + std::string(status.message()));
}

}  // namespace slimpack
