// Two's-complement wrapping integer arithmetic: model data may overflow, and
// signed overflow must not be undefined behaviour. Floats pass through.
#ifndef SLIMPACK_RUNTIME_KERNELS_WRAP_H_
#define SLIMPACK_RUNTIME_KERNELS_WRAP_H_

#include <type_traits>

namespace slimpack::runtime {

template <typename T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}

template <typename T>
T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    // Promote to at least unsigned int so u16*u16 cannot overflow int.
    using P = std::common_type_t<U, unsigned int>;
    return static_cast<T>(static_cast<P>(a) * static_cast<P>(b));
  } else {
    return a * b;
  }
}

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_KERNELS_WRAP_H_
