// Byte dot products for the W8A8 kernels: unsigned bytes times signed
// bytes, four at a time, summed in int32 with wrap-around (mod 2^32, the
// sum ONNX's integer ops define, so no order or blocking can change a bit).
// This is the shape of x86's VPDPBUSD (AVX512-VNNI) and Arm's UDOT/SDOT: a
// CPU with such an instruction multiplies 64 byte pairs per instruction,
// four times the float kernels' 16 fused multiply-adds, which is what lets
// a W8A8 model run faster than its float original.
//
// One operand is a row-major matrix of `rows` x 4*kq bytes (`ldr` bytes
// apart), the other a panel of `cols` columns stored as [kq][pcols][4]
// bytes (pcols >= cols, a multiple of 16): column c's bytes 4q..4q+3 are
// contiguous, so one 64-byte load holds four k of sixteen columns. Then
//   out[r * ldo + c] = sum over q < kq, j < 4 of row[r][4q + j] * panel[q][c][j]
// for r < rows, c < cols (other outputs untouched). Which operand is the
// signed one is the caller's choice (a convolution broadcasts weight rows
// over activation columns, a matmul activation rows over weight columns).
// Callers pad k to a multiple of four with zeros in either operand.
#ifndef SLIMPACK_RUNTIME_KERNELS_INT8_DOT_H_
#define SLIMPACK_RUNTIME_KERNELS_INT8_DOT_H_

#include <cstdint>

namespace slimpack::runtime::kernels::int8dot {

// A requantising store for Dot (Operands::requant): instead of its int32
// sum s, out[r][c] becomes the byte
//   b = SaturateRound(f32(s + add[r] - zp[r] * colsum[c]) * mult[r])
// at out[r * ldo + c], the integer terms mod 2^32 (no zp term when zp is
// null), where SaturateRound(v) is out_zp for NaN, else clamp(rint(v),
// lo - out_zp, hi - out_zp) + out_zp (half to even):
// quantize_internal::SaturateRoundBytes' rule, so a QLinearConv's bytes
// come out as its separate requantisation gives them. [lo, hi] is [0, 255]
// or [-128, 127]. The sums never leave the registers: storing them and
// reading them back for a second pass had been a fifth of a W8A8 CNN's
// pointwise layers.
struct Requant {
  const int32_t* add = nullptr;     // [rows]
  const int32_t* zp = nullptr;      // [rows], or null
  const int32_t* colsum = nullptr;  // [cols], read only with zp
  const float* mult = nullptr;      // [rows]
  int32_t lo = 0, hi = 255, out_zp = 0;
  uint8_t* out = nullptr;
  int64_t ldo = 0;
};

struct Operands {
  int64_t rows = 0, cols = 0, kq = 0;
  const uint8_t* row = nullptr;  // the rows' bytes
  int64_t ldr = 0;
  const uint8_t* panel = nullptr;  // the panel's bytes
  int64_t pcols = 0;
  bool signed_rows = false;  // rows are int8 and the panel uint8, or the reverse
  int32_t* out = nullptr;
  int64_t ldo = 0;
  // When set, the sums are requantised to its bytes (out and ldo unused).
  const Requant* requant = nullptr;
  // Optional, with signed rows: the rows' bytes widened for the AVX2
  // kernel, [rows][kq][2] (RowHalves); other kernels ignore it.
  const uint32_t* row_halves = nullptr;
};

// Whether Dot runs the AVX2 kernel here (no byte dot instruction), which
// reads Operands::row_halves: callers that reuse rows (a convolution's
// weights) widen them once instead of on every tile.
bool WantsRowHalves();

// Row bytes 4q..4q+3 (signed) as the AVX2 kernel's 16-bit halves: bytes 0
// and 2 sign-extended in the low and high half of the first value, 1 and 3
// of the second.
void RowHalves(const uint8_t* quad, uint32_t out[2]);

// The product with this CPU's fastest kernel (AVX512-VNNI, else AVX-VNNI,
// else AVX2, else a portable loop: the same sums).
void Dot(const Operands& o);

// The portable loop, for tests and CPUs without AVX2.
void DotPortable(const Operands& o);

// Whether the W8A8 kernels take the byte path (int8_dot_ops.h): by default
// when Dot has a vector kernel here (a byte dot instruction, or AVX2's
// 16-bit multiply-adds); on SSE2-only CPUs their float-exact and pmaddwd
// paths are faster than the portable loop. Tests turn it on and off to run
// both paths on one machine (on, without a vector kernel, Dot runs
// DotPortable).
bool Fast();
void SetFast(bool enabled);

// The AVX512-VNNI kernel (int8_dot_vnni.cc): false when not built for this
// architecture or the CPU lacks the instructions.
bool DotVnni512(const Operands& o);
bool HaveVnni512();

// The AVX-VNNI kernel (int8_dot_avxvnni.cc; 256-bit, for CPUs with it but
// without AVX-512), the same way.
bool DotAvxVnni(const Operands& o);
bool HaveAvxVnni();

// The AVX2 kernel (int8_dot_avx2.cc): the same sums from 16-bit multiply-
// adds, for AVX2 CPUs without either instruction.
bool DotAvx2Madd(const Operands& o);
bool HaveAvx2Madd();

// Whether this CPU has either byte dot instruction.
bool HaveByteDot();

// out[i] = clamp(rint(f32(acc[i] + bias) * mult), lo - zp, hi - zp) + zp as
// bytes, NaN as zp, the sum wrapping mod 2^32: what QLinearConv's scalar
// requantisation (quantize_internal::SaturateRoundBytes) gives, sixteen
// lanes at a time; [lo, hi] is the output type's range. It needs only
// AVX512F but shares the VNNI kernel's object and gate: false when the CPU
// lacks AVX512-VNNI (the caller then runs the scalar definition).
bool RequantizeVnni512(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t lo,
                       int32_t hi, int32_t zp, uint8_t* out);

// The same eight lanes at a time with AVX2 (int8_dot_avx2.cc), for the
// CPUs the AVX2 kernel serves: false without AVX2. [lo, hi] is [0, 255]
// or [-128, 127].
bool RequantizeAvx2(const int32_t* acc, int64_t n, int32_t bias, float mult, int32_t lo,
                    int32_t hi, int32_t zp, uint8_t* out);

// QuantizeLinear's bytes: out[i] = clamp(rint(x[i] / scale), lo - zp,
// hi - zp) + zp, NaN as zp (quantize_internal::SaturateRoundBytes of the
// quotients), eight lanes at a time with AVX2: false without AVX2.
bool QuantizeAvx2(const float* x, int64_t n, float scale, int32_t lo, int32_t hi, int32_t zp,
                  uint8_t* out);

}  // namespace slimpack::runtime::kernels::int8dot

#endif  // SLIMPACK_RUNTIME_KERNELS_INT8_DOT_H_
