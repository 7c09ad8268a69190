// AttributeProto -> ir::Attribute for every attribute kind the IR has
// (scalars, lists, tensors, graphs).
#ifndef SLIMPACK_FORMATS_ONNX_ATTRIBUTE_FROM_PROTO_H_
#define SLIMPACK_FORMATS_ONNX_ATTRIBUTE_FROM_PROTO_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "formats/onnx/import_context.h"
#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// Imports a subgraph attribute; supplied by the graph importer so the two
// files do not depend on each other.
using SubgraphImporter =
    std::function<absl::StatusOr<std::shared_ptr<ir::Graph>>(
        const onnx::GraphProto&)>;

// An attribute whose `type` is UNDEFINED (old exporters) is typed from the
// one value field that is set. Errors (not naming the attribute; the caller
// does): InvalidArgument when the type cannot be determined or the attribute
// references a function attribute (ref_attr_name) outside a function;
// Unimplemented for SPARSE_TENSOR(S) and TYPE_PROTO(S), listing the
// supported kinds; tensor errors from TensorFromProto.
absl::StatusOr<ir::Attribute> AttributeFromProto(
    const onnx::AttributeProto& proto, const ImportContext& ctx,
    const SubgraphImporter& import_subgraph);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_ATTRIBUTE_FROM_PROTO_H_
