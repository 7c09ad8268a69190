// Tensor layouts of the manifest (spec.md section 5, "Layouts"). Internal
// to the loader; layouts are resolved after every tensor name is known.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_LAYOUT_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_LAYOUT_H_

#include <cstddef>
#include <utility>
#include <vector>

#include "formats/shard/loader/json_reader.h"
#include "formats/shard/loader/manifest.h"
#include "formats/shard/loader/manifest_fields.h"

namespace slimpack::loader::internal {

// Layout objects of the tensors that are not plain, by tensor index, as
// collected while the tensor entries are read. Those tensors carry a
// provisional non-plain kind until ParseLayouts sets the real one, so the
// "parameters must be plain" check never depends on array order.
using PendingLayouts = std::vector<std::pair<size_t, const JsonValue*>>;

// Parses each pending layout into m->tensors[i].layout. InvalidArgument for
// a bad axis, group size, missing or mis-shaped scale / zero point;
// Unimplemented for an unknown kind or packing.
Status ParseLayouts(const Fields& top, const PendingLayouts& pending, Manifest* m);

}  // namespace slimpack::loader::internal

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_LAYOUT_H_
