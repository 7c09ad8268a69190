// Unique node names for one ONNX graph: unnamed nodes become
// "<op_type>_<index>", repeated names get a numeric suffix.
#ifndef SLIMPACK_FORMATS_ONNX_NODE_NAMES_H_
#define SLIMPACK_FORMATS_ONNX_NODE_NAMES_H_

#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// Returns one name per node of `graph`, in order, all distinct. The first
// node carrying a name keeps it; generated names never take a name that a
// later node carries. Each rename of a duplicate is reported in `warnings`.
std::vector<std::string> AssignUniqueNodeNames(
    const onnx::GraphProto& graph, std::vector<std::string>* warnings);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_NODE_NAMES_H_
