// Depthwise 2-D convolution with channels in the vector lanes (16 with
// AVX-512, 8 with AVX2): the layout ONNX Runtime's NCHWc depthwise kernel
// computes in, but entered and left per call, so the graph keeps NCHW.
// A task transposes a band of input rows of one block of channels into a
// zero-padded buffer of pixel vectors, runs every output pixel of the band
// as one vector of channels (a fused multiply-add per (kernel row, kernel
// column) with that tap's vector of per-channel weights, from +0, then
// + bias: the order conv_direct.h fixes, padding taps included), and
// transposes the sums back into the channels' planes. With channels in
// the lanes no lane is wasted on a 7- or 14-wide row and no row of a
// stride-2 layer is split into phases: the row-vector kernel of
// conv_depthwise.cc ran MobileNet's depthwise layers at 6-19 GMAC/s.
//
// The kernels live in conv_depthwise_lanes_avx512.cc and _avx2.cc, each
// compiled for its instruction set only (runtime/CMakeLists.txt); callers
// check the CPU first (conv_depthwise.cc).
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_LANES_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_LANES_H_

#include <cstdint>

#include "runtime/kernels/conv_direct.h"

namespace slimpack::runtime::kernels::depthwise_lanes {

// A shape's buffers, from the shape and the lane count alone (so no output
// depends on the thread count): MakeGeometry in conv_depthwise.cc.
struct Geometry {
  int64_t lanes = 0;
  int64_t padded_width = 0;  // pixels per buffered input row, left padding included
  int64_t band_rows = 0;     // output rows per task (the last band may have fewer)
  int64_t band_in_rows = 0;  // input rows a band of band_rows reads
  // Offsets into a task's scratch, in floats: the taps' weight vectors, the
  // band's input pixel vectors, its output pixel vectors.
  int64_t weights_at = 0, input_at = 0, sums_at = 0, scratch_floats = 0;
};

// Output rows per band: as many as keep the band's input buffer within a
// budget (it is read kernel_h / stride_h times over).
Geometry MakeGeometry(const Conv2DShape& s, int64_t lanes);

// The input's element type: floats, or QLinearConv's bytes, read as the
// exact floats x - zero_point (quantized_depthwise.h).
enum class Input { kF32, kU8, kI8 };

// QLinearConv's requantisation of a task's sums, done as they are
// unpacked instead of writing float planes: channel l's output byte is
// clamp(rint(f32(int(sum) + bias[l]) * mult[l]), lo - zp, hi - zp) + zp
// (the sum truncated to int32, the addition wrapping mod 2^32, NaN as 0
// before the clamp), the bits of ExactSumsToInts then RequantizeSums
// (quantized_depthwise.h).
struct Requant {
  const int32_t* bias = nullptr;  // channel c0's
  const float* mult = nullptr;    // channel c0's
  int32_t zp = 0, lo = 0, hi = 255;  // output zero point, the byte type's range
  uint8_t* y = nullptr;  // channel c0's output row oh0
  int64_t y_stride = 0;  // bytes from one channel's output to the next's
};

// Output rows [oh0, oh1) of channels [c0, c0 + count) of one image, for a
// depthwise shape (group == channels == out_channels).
struct Task {
  const Geometry* g = nullptr;
  const void* x = nullptr;  // channel c0's input plane (height x width)
  Input input = Input::kF32;
  float zero_point = 0.0f;  // subtracted from byte inputs
  const float* w = nullptr;     // channel c0's weights (kernel_h x kernel_w each)
  const float* bias = nullptr;  // channel c0's bias, or nullptr
  float* y = nullptr;     // channel c0's output row oh0
  int64_t y_stride = 0;   // floats from one channel's output to the next's
  ConvActivation act = ConvActivation::kNone;  // on each output as it is stored
  const Requant* requant = nullptr;  // bytes out instead of y (act unused)
  int64_t count = 0;      // channels in the block: 1 .. lanes
  int64_t oh0 = 0, oh1 = 0;
  float* scratch = nullptr;  // g->scratch_floats floats, 64-byte aligned
};

// The kernels; the CPU must have AVX-512F (16 lanes) or AVX2 + FMA (8).
void RunAvx512(const Conv2DShape& s, const Task& t);
void RunAvx2(const Conv2DShape& s, const Task& t);

// False where a kernel's object was built without its instruction set (a
// compiler or build that did not pass the flags): the kernel is then empty
// and must not be chosen.
bool Avx512Compiled();
bool Avx2Compiled();

}  // namespace slimpack::runtime::kernels::depthwise_lanes

#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_DEPTHWISE_LANES_H_
