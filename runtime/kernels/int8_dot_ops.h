// The W8A8 convolution and matmul sums through int8dot's byte dot products
// (runtime/kernels/int8_dot.h), for CPUs that have them (int8dot::Fast()).
//
// ONNX defines acc = sum_k (x_k - xzp) * (w_k - wzp) mod 2^32. The byte dot
// instruction multiplies unsigned by signed bytes without zero points, so
// each operand is first mapped onto its instruction type (an int8
// activation gets +128, a uint8 weight -128, and their zero points move with
// them; the differences, and so the products, are unchanged), and then
//   acc = sum x'w' - wzp' * sum x' - xzp' * sum w' + K * xzp' * wzp'
// with every term mod 2^32: the exact sums the other integer paths give,
// bit for bit, in any order.
#ifndef SLIMPACK_RUNTIME_KERNELS_INT8_DOT_OPS_H_
#define SLIMPACK_RUNTIME_KERNELS_INT8_DOT_OPS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/kernels/quantize_util.h"
#include "runtime/kernels/window.h"
#include "runtime/rt_tensor.h"
#include "runtime/thread_pool.h"

namespace slimpack::runtime::kernels {

// Where each kernel tap of each output position reads the input plane:
// im2col's index, shared by the integer convolution paths.
struct Im2colTable {
  int64_t in_size = 1, out_size = 1, kprod = 1;
  int64_t chunk = 0, chunks = 0;  // output positions per task, and tasks per plane
  std::vector<int64_t> offset;    // [tap][position]: offset in the plane, or -1 (padding)
  std::vector<uint8_t> run;       // [tap][chunk]: reads consecutive inputs, no padding
  // A 2-D window other than a 1 x 1, stride-1, unpadded one, when the
  // caller allows it (`planar`): no offset table, the geometry instead, for
  // DotConv's row-wise layout.
  bool planar = false;
  // A 1 x 1, stride-1, unpadded window, when the caller allows planar
  // tables: position o of every tap reads plane offset o, so no table.
  bool pointwise = false;
  int64_t ih = 0, iw = 0, ow = 0, kh = 0, kw = 0, sh = 0, sw = 0, dh = 0, dw = 0, ph = 0, pw = 0;
};
Im2colTable BuildIm2colTable(const std::vector<int64_t>& in, const WindowGeometry& g,
                             int64_t chunk, bool planar_ok = false);

// A convolution weight [m, kdim] as signed byte rows (k padded to a
// multiple of four with zeros), with what the zero-point terms need. With
// `taps` > 1 (a planar Im2colTable's kprod) k runs tap-major, as
// DotConv lays out planar columns, each tap's channels padded to a
// multiple of four (`lane_channels`) so that every quad of k is four
// channels at one tap (a 3-channel stem's taps had straddled quads and
// been laid out a byte at a time); with 1, in ONNX's order. Padded k have
// zero weights and are left out of the x' sums, so the bytes the layout
// puts there do not matter.
struct DotConvWeights {
  static constexpr int kCacheKey = 1;
  int64_t m = 0, kdim = 0, kq = 0, taps = 1;
  int64_t lane_channels = 0;      // with taps > 1: channels per tap, padded to a multiple of 4
  std::vector<uint8_t> rows;      // [m][4 kq] int8 bit patterns
  std::vector<uint8_t> ones;      // [4 kq]: 1 for the real k: a row that sums x'
  std::vector<int32_t> zp, sum;   // per channel: wzp' and sum_k w' (mod 2^32)
  bool any_zp = false;            // some wzp' != 0: the per-position sums are needed
  // rows widened for the AVX2 kernel (int8dot::RowHalves), [m][kq][2],
  // where Dot runs it (int8dot::WantsRowHalves), else empty.
  std::vector<uint32_t> halves;
  int64_t bytes() const {
    return static_cast<int64_t>(rows.size() + ones.size() + 8 * zp.size() + 4 * halves.size());
  }
};
std::shared_ptr<const DotConvWeights> PrepareDotConvWeights(
    const RtTensor& w, int64_t m, const quantize_internal::QParams& wzp, int64_t taps);

// QLinearConv's requantisation for DotConv: output channel mi's sums s
// become the bytes SaturateRound(f32(s + bias[mi]) * mult[mi]) of y
// [batch, m, positions] (int8dot::Requant's rule, [lo, hi] the byte
// type's range, zp y's zero point), inside the product's register tiles.
struct DotConvRequant {
  const int32_t* bias = nullptr;  // [m]
  const float* mult = nullptr;    // [m]
  int32_t lo = 0, hi = 255, zp = 0;
  uint8_t* y = nullptr;
};

// acc[n, m, position] for x [batch, channels, spatial...] (u8 or i8, zero
// point xzp) and `group` groups: what IntegerConv in quantized_conv.cc sums.
// With `requant` set, the sums are requantised into its y instead (acc may
// then be null).
void DotConv(const RtTensor& x, int32_t xzp, const DotConvWeights& w, int64_t group,
             const Im2colTable& t, ThreadPool* pool, int32_t* acc,
             const DotConvRequant* requant = nullptr);

// A matmul's B [k, n] (one or more matrices) as unsigned-by-signed panels.
struct DotMatMulWeights {
  static constexpr int kCacheKey = 2;
  int64_t k = 0, n = 0, kq = 0, pcols = 0, matrices = 0;
  std::vector<uint8_t> panel;    // per matrix [kq][pcols][4] int8 bit patterns
  std::vector<int32_t> zp, sum;  // per column: bzp' and, per matrix, sum_k b'
  int64_t bytes() const {
    return static_cast<int64_t>(panel.size() + 4 * (sum.size() + zp.size()));
  }
};
std::shared_ptr<const DotMatMulWeights> PrepareDotMatMulWeights(
    const RtTensor& b, int64_t k, int64_t n, const quantize_internal::QParams& bzp);

// acc[batch, m, n] = sum_k (a - azp[row]) * (b - bzp[col]) for A's matrix at
// a_off[i] times B's at b_off[i] (offsets in matrices, as PlanMatMul gives).
void DotMatMul(const RtTensor& a, int64_t m, const quantize_internal::QParams& azp,
               const DotMatMulWeights& b, const std::vector<int64_t>& a_off,
               const std::vector<int64_t>& b_off, ThreadPool* pool, int32_t* acc);

}  // namespace slimpack::runtime::kernels

#endif  // SLIMPACK_RUNTIME_KERNELS_INT8_DOT_OPS_H_
