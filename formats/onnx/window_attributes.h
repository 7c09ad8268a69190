// Sliding-window attributes (strides, dilations, kernel_shape, pads,
// output_padding) of Conv-like and pooling nodes, checked on the untrusted
// ModelProto before ONNX shape inference sees it: libonnx divides by
// strides without checking them (SIGFPE on 0) and adds pads without
// overflow checks.
#ifndef SLIMPACK_FORMATS_ONNX_WINDOW_ATTRIBUTES_H_
#define SLIMPACK_FORMATS_ONNX_WINDOW_ATTRIBUTES_H_

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// Checks every default-domain Conv, ConvTranspose, ConvInteger, QLinearConv,
// MaxPool, AveragePool, LpPool and MaxUnpool node of `graph` and,
// recursively, of its subgraphs:
//  - strides, dilations and kernel_shape values >= 1; pads and
//    output_padding values >= 0;
//  - strides, dilations, kernel_shape and output_padding of one length r
//    and pads of length 2r (whichever are present);
//  - kernel_shape present on the pools, which require it;
//  - the per-axis extents ONNX and the interpreter compute from these,
//    (kernel_shape - 1) * dilations + 1 and pads[i] + pads[i + r], fit in
//    int64.
// InvalidArgument naming the node as the importer does ("node 'conv1'
// (Conv)", unnamed nodes as "<op_type>_<index>"), the attribute, the index
// and the value, e.g. "node 'conv1' (Conv): strides[1] = 0, must be >= 1";
// subgraph errors are prefixed with the node and attribute holding them.
absl::Status ValidateWindowAttributes(const onnx::GraphProto& graph);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_WINDOW_ATTRIBUTES_H_
