// The Python-literal header dict of a .npy file:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
#ifndef SLIMPACK_FORMATS_NUMPY_NPY_HEADER_H_
#define SLIMPACK_FORMATS_NUMPY_NPY_HEADER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace slimpack::numpy {

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses exactly the three keys descr, fortran_order and shape (each once;
// any other key, a duplicate or a missing one is an error naming it),
// followed only by spaces and newlines. InvalidArgument with the byte
// offset inside the header; Unimplemented for a structured (list) descr.
absl::StatusOr<NpyHeader> ParseNpyHeaderDict(std::string_view text);

// The dict text numpy writes for `header` (no padding).
std::string FormatNpyHeaderDict(const NpyHeader& header);

}  // namespace slimpack::numpy

#endif  // SLIMPACK_FORMATS_NUMPY_NPY_HEADER_H_
