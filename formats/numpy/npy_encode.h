// Internal: the .npy prefix + padded header for a tensor, shared by the .npy
// and .npz writers so the data bytes are written without a copy.
#ifndef SLIMPACK_FORMATS_NUMPY_NPY_ENCODE_H_
#define SLIMPACK_FORMATS_NUMPY_NPY_ENCODE_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace slimpack::numpy {

// Everything before the data; EncodeNpy's errors.
absl::StatusOr<std::string> EncodeNpyHeader(const ir::Tensor& tensor);

}  // namespace slimpack::numpy

#endif  // SLIMPACK_FORMATS_NUMPY_NPY_ENCODE_H_
