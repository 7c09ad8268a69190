// The re-laid-out input the direct convolution kernels read (conv_direct.cc,
// conv_blocked.cc): each channel copied once into zero-padded planes split
// by stride phase, so every (kernel row, kernel column) term of every output
// reads one contiguous run.
#ifndef SLIMPACK_RUNTIME_KERNELS_CONV_LAYOUT_H_
#define SLIMPACK_RUNTIME_KERNELS_CONV_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "runtime/kernels/conv_direct.h"

namespace slimpack::runtime::kernels::conv_layout {

// Flattened output positions per register tile of the implicit-GEMM kernel.
constexpr int64_t kNr = 32;

// The re-laid-out input of one image. Plane (c, p, q) holds the padded input
// rows p, p + stride_h, ... and columns q, q + stride_w, ... of channel c, as
// hq x wq values. Output position (oh, ow) is flattened as oh * wq + ow, so
// term (c, i, j) of every output reads the buffer at that flattened index
// plus a fixed offset; columns ow >= out_w are computed and discarded.
struct Layout {
  int64_t hq = 0, wq = 0;
  int64_t phase_plane = 0;   // hq * wq
  int64_t channel_stride = 0;  // stride_h * stride_w * phase_plane
  int64_t positions = 0;     // out_h * wq flattened outputs
  int64_t padded_positions = 0;  // rounded up to kNr
  int64_t max_term_offset = 0;   // within a channel
};

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Offset of term (i, j) of a channel plane set in the buffer.
int64_t TermOffset(const Conv2DShape& s, const Layout& l, int64_t i, int64_t j);

// Offset of every term k = (c, kh, kw) of one group, in that order, from an
// output position's flattened index: c * channel_stride + TermOffset. The
// caller has checked they fit 32 bits (DirectConv2DSupported).
std::vector<int32_t> TermOffsets(const Conv2DShape& s, const Layout& l);

Layout MakeLayout(const Conv2DShape& s);

// Floats of the buffer: every plane, plus the slack the last tile of the
// last channel reads past its plane (discarded outputs read finite zeros).
int64_t BufferFloats(const Conv2DShape& s, const Layout& l);

// True when the input image already has the buffer's layout (stride 1, no
// leading padding, every input row and column read: pointwise and "valid"
// convolutions), so the kernel reads it where it is instead of a copy.
bool InPlace(const Conv2DShape& s, const Layout& l);

// Copies channel c of image x (xc: its height x width plane) into its
// stride-phase planes with padding (dst: channel_stride floats, whatever
// they held before).
void PackChannel(const Conv2DShape& s, const Layout& l, const float* xc, float* dst);

// The row copiers PackChannel can use; all write the same buffer. Tests
// run each one the CPU has against the portable loops.
enum class PackIsa { kPortable, kAvx2, kAvx512 };

// What PackChannel uses here (the best this CPU and SLIMPACK_CPU_MAX allow).
PackIsa BestPackIsa();

// PackChannel with the given copiers (the CPU must have them).
void PackChannel(const Conv2DShape& s, const Layout& l, const float* xc, float* dst,
                 PackIsa isa);

}  // namespace slimpack::runtime::kernels::conv_layout

#endif  // SLIMPACK_RUNTIME_KERNELS_CONV_LAYOUT_H_
