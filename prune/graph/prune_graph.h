// Channel dependency analysis of an ONNX-imported graph for structured
// pruning: which slices of which initializers must be removed together when
// one output channel of a Conv / Gemm / MatMul is removed.
//
// Every weight node (Conv, Gemm, MatMul, slimpack.FusedConv / FusedGemm /
// MatMulAdd with a constant weight) opens a channel *space*: its output
// channels. Each value carries, along one channel axis, a list of segments
// (space, channel range, width: one channel = `width` consecutive indices
// of the axis). Following the graph in topological order:
//  - element-wise unary ops, pools, Dropout/Identity keep the segments;
//    BatchNormalization and Add/Sub/Mul/Div with a constant slice the
//    constant's matching axis (a dim of 1 broadcasts and is left alone);
//  - Add/Sub/Mul/Div/Sum of two channel values (a residual sum) union their
//    spaces (union-find): all branches prune together or not at all;
//  - Concat along the channel axis concatenates segments (offsets add up);
//    Split with explicit sizes cuts them (at channel boundaries only);
//  - Flatten(axis 1) of [N, C, spatial...] with a static spatial size S
//    (GlobalAveragePool output: S = 1; else value_info) multiplies the
//    width by S: channel c becomes features [c*S, (c+1)*S) of the next Gemm;
//  - a depthwise Conv (group = C_in, weight [C_in*m, 1, ...]) couples input
//    channel c with its output channels [c*m, (c+1)*m);
//  - consumers' weights (Conv/Gemm/MatMul input axis) are sliced.
// Anything else reached by a channel value (graph outputs, unknown ops,
// Reshape, Transpose, Split without sizes, grouped convs, non-constant weights, shared
// weights, a value's channel count unknown) makes the spaces involved
// unprunable with a reason; nothing is guessed.
#ifndef SLIMPACK_PRUNE_GRAPH_PRUNE_GRAPH_H_
#define SLIMPACK_PRUNE_GRAPH_PRUNE_GRAPH_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::prune {

// One slice rule of an initializer: channel c of the group (for c in
// [begin, begin + count)) owns indices [offset + (c - begin) * width,
// + width) of `tensor` along `axis`.
struct ChannelMember {
  std::string tensor;
  int axis = 0;
  int64_t begin = 0, count = 0;
  int64_t offset = 0, width = 1;
  // How the tensor reads the channel: the producing weight's output rows
  // (kOutput), a consumer weight's input features (kInput) or a per-channel
  // vector / constant (kVector). Activation importance and refit use it.
  enum class Role { kOutput, kInput, kVector } role = Role::kVector;
  bool operator==(const ChannelMember& o) const;
};

struct ChannelGroup {
  std::string name;       // producer node names joined by '+'
  int64_t channels = 0;   // size of each coupled space
  std::vector<ChannelMember> members;
  std::vector<std::string> unprunable;  // reasons; empty = prunable
  bool prunable() const { return unprunable.empty(); }
};

// A segment of a value's channel axis (see the header comment).
struct ChannelSegment {
  int group = -1;  // index into ChannelGroups::groups; -1 = fixed channels
  int64_t begin = 0, count = 0, width = 1;
};

struct ValueChannels {
  int axis = 1;       // channel axis; negative counts from the end
  int64_t rank = -1;  // -1 unknown
  int64_t spatial = -1;  // product of the dims after a non-negative axis
  std::vector<ChannelSegment> segments;
};

// A node attribute that encodes a channel count (depthwise Conv `group`):
// after pruning it becomes the kept extent of `value`'s channel axis.
struct ChannelAttribute {
  size_t node = 0;  // index into graph.nodes
  std::string attribute, value;
};

// A Split along the channel axis with explicit sizes (`split` attribute,
// or a constant input 1): after pruning each size becomes the kept extent
// of its output.
struct ChannelSplit {
  size_t node = 0;  // index into graph.nodes
  std::vector<std::string> outputs;
};

struct ChannelGroups {
  std::vector<ChannelGroup> groups;
  std::map<std::string, ValueChannels> values;  // value name -> channels
  std::vector<ChannelAttribute> attributes;
  std::vector<ChannelSplit> splits;
  // Weight tensor -> index of the node reading it as a weight (importance,
  // refit). Indices stay valid: pruning never reorders nodes.
  std::map<std::string, size_t> weight_nodes;
};

// Analyses the top-level graph. Errors only on a malformed graph (a cycle,
// InvalidArgument naming a weight node whose weight rank is wrong);
// everything unsupported becomes an unprunable reason.
absl::StatusOr<ChannelGroups> BuildChannelGroups(const ir::Graph& graph);

// One line per group and one per member, for tests and -v:
//   group conv1 (16 channels): prunable
//     conv1.weight axis 0 [0,16) offset 0 width 1 output
std::string FormatChannelGroups(const ChannelGroups& groups);

}  // namespace slimpack::prune

#endif  // SLIMPACK_PRUNE_GRAPH_PRUNE_GRAPH_H_
