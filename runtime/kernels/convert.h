// Value conversion between element types with defined results everywhere:
// float to integer saturates (NaN becomes 0), integer narrowing wraps, bool
// is "non-zero". C++ leaves out-of-range float->int undefined; we may not.
#ifndef SLIMPACK_RUNTIME_KERNELS_CONVERT_H_
#define SLIMPACK_RUNTIME_KERNELS_CONVERT_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace slimpack::runtime {

template <typename To, typename From>
To ConvertNumber(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(v);
  } else if constexpr (std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To(0);
    // The bounds as long double are exact for every integer type here.
    const long double lo = static_cast<long double>(std::numeric_limits<To>::min());
    const long double hi = static_cast<long double>(std::numeric_limits<To>::max());
    const long double x = static_cast<long double>(v);
    if (x <= lo) return std::numeric_limits<To>::min();
    if (x >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(v);  // integer narrowing is modular since C++20 and in GCC
  }
}

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_KERNELS_CONVERT_H_
