// Writes a whole file through a temporary beside it, renamed into place, so
// a crash never leaves a half-written file under the final name.
#ifndef SLIMPACK_FORMATS_NUMPY_ATOMIC_WRITE_H_
#define SLIMPACK_FORMATS_NUMPY_ATOMIC_WRITE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace slimpack::numpy {

// Writes the concatenation of `pieces` to `path`. Errors name the path and
// the errno text (NotFound for a missing parent directory).
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::vector<std::string_view>& pieces);

}  // namespace slimpack::numpy

#endif  // SLIMPACK_FORMATS_NUMPY_ATOMIC_WRITE_H_
