// Mapping between NumPy dtype descriptors ("<f4", "|b1") and ir::DType.
#ifndef SLIMPACK_FORMATS_NUMPY_NPY_DESCR_H_
#define SLIMPACK_FORMATS_NUMPY_NPY_DESCR_H_

#include <optional>
#include <string>

#include "ir/dtype.h"

namespace slimpack::numpy {

// The dtype for a little-endian (or byte-order-free) descr; nullopt if
// unsupported. Big-endian descrs are reported separately by the caller.
std::optional<ir::DType> DTypeFromDescr(const std::string& descr);
// The descr numpy writes for `dtype`; nullopt if NumPy has no such type.
std::optional<std::string> DescrFromDType(ir::DType dtype);
// "<f4 <f8 ..." for error messages.
std::string SupportedDescrs();

}  // namespace slimpack::numpy

#endif  // SLIMPACK_FORMATS_NUMPY_NPY_DESCR_H_
