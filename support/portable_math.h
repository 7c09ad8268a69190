// Elementary functions that give the same bits on every CPU.
//
// libm does not: glibc picks an FMA-compiled exp, log, pow, sin, cos, ...
// at load time on CPUs that have FMA (its own comments count the inputs on
// which the two builds round differently), and aarch64 builds contract
// every a*b+c. Any such value that reaches an artifact byte — a softmax in
// a calibration pass, a rotary table, an AWQ scale, an entropy threshold —
// then makes the artifact depend on the machine that built it.
//
// These are written with IEEE-754 basic operations only (+ - * / sqrt,
// exact scaling by powers of two, round-to-integer), in double, in a fixed
// order, and compiled with -ffp-contract=off like the rest of the tree, so
// each result is a function of the input alone. Accuracy: the double
// versions are within a few ulp of the true value (argument reduction of
// sin/cos/tan is exact up to |x| = 2^19 * pi/2, then degrades gracefully;
// Pow(x, y) = Exp(y * Log(x)) for non-integral y carries a relative error
// of about |y ln x| * 2^-53 more, which the float version rounds away);
// the float versions evaluate in double and round once, so they are
// correctly rounded except when the true value lies within ~1e-16 of a
// float rounding boundary. Special values (NaN, +-inf, +-0, overflow,
// underflow) follow C99 Annex F.
#ifndef SLIMPACK_SUPPORT_PORTABLE_MATH_H_
#define SLIMPACK_SUPPORT_PORTABLE_MATH_H_

#include <cstdint>

namespace slimpack::pmath {

double Exp(double x);
double Expm1(double x);
double Log(double x);
double Log1p(double x);
double Log10(double x);
double Pow(double x, double y);
double Sin(double x);
double Cos(double x);
double Tan(double x);
double Atan(double x);
double Asin(double x);
double Acos(double x);
double Sinh(double x);
double Cosh(double x);
double Tanh(double x);
double Asinh(double x);
double Acosh(double x);
double Atanh(double x);

inline float Exp(float x) { return static_cast<float>(Exp(static_cast<double>(x))); }
// out[i] = Exp(x[i]) (the float overload) for i in [0, n), with the bits of
// the scalar call on every CPU: four lanes at a time on the same double
// operations where |x| <= 708 (2^n stays normal), the scalar call for a
// group holding anything else (NaN, the subnormal and overflowing ends).
// out may equal x.
void ExpArray(const float* x, float* out, int64_t n);
inline float Expm1(float x) { return static_cast<float>(Expm1(static_cast<double>(x))); }
inline float Log(float x) { return static_cast<float>(Log(static_cast<double>(x))); }
inline float Log1p(float x) { return static_cast<float>(Log1p(static_cast<double>(x))); }
inline float Pow(float x, float y) {
  return static_cast<float>(Pow(static_cast<double>(x), static_cast<double>(y)));
}
inline float Sin(float x) { return static_cast<float>(Sin(static_cast<double>(x))); }
inline float Cos(float x) { return static_cast<float>(Cos(static_cast<double>(x))); }
inline float Tan(float x) { return static_cast<float>(Tan(static_cast<double>(x))); }
inline float Atan(float x) { return static_cast<float>(Atan(static_cast<double>(x))); }
inline float Asin(float x) { return static_cast<float>(Asin(static_cast<double>(x))); }
inline float Acos(float x) { return static_cast<float>(Acos(static_cast<double>(x))); }
inline float Sinh(float x) { return static_cast<float>(Sinh(static_cast<double>(x))); }
inline float Cosh(float x) { return static_cast<float>(Cosh(static_cast<double>(x))); }
inline float Tanh(float x) { return static_cast<float>(Tanh(static_cast<double>(x))); }
inline float Asinh(float x) { return static_cast<float>(Asinh(static_cast<double>(x))); }
inline float Acosh(float x) { return static_cast<float>(Acosh(static_cast<double>(x))); }
inline float Atanh(float x) { return static_cast<float>(Atanh(static_cast<double>(x))); }

}  // namespace slimpack::pmath

#endif  // SLIMPACK_SUPPORT_PORTABLE_MATH_H_
