// Reading the graphs of an ONNX-origin manifest (spec.md section 6.1):
// values, nodes, attributes and subgraphs, with every name reference
// resolved and the nodes checked to be in topological order. Internal to
// the loader.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_GRAPH_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_GRAPH_H_

#include <string>
#include <string_view>
#include <vector>

#include "formats/shard/loader/manifest.h"
#include "formats/shard/loader/manifest_fields.h"

namespace slimpack::loader::internal {

// Parses the graph object `v` (found at `path`) into `g`, resolving
// initializers and tensor attributes against m.tensors. InvalidArgument,
// naming the node and the value, for a reference to a missing tensor, an
// undefined node input or graph output, or a node input that only a later
// node (or the node itself) defines: nodes must be in topological order,
// and a subgraph sees only what its enclosing graph defines before the node
// holding it.
Status ParseGraph(const JsonValue& v, const ObjectPath& path, const Manifest& m,
                  Graph* g);

// The array of strings under `key`; empty if absent and not `required`.
Result<std::vector<std::string>> StringList(const Fields& f, std::string_view key,
                                            bool required);

}  // namespace slimpack::loader::internal

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_GRAPH_H_
