// The manifest's "tensors" array (spec.md sections 2 and 5). Internal to the
// loader; layouts and sparsity records are only collected here, and parsed
// after every tensor name is known.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_TENSORS_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_TENSORS_H_

#include "formats/shard/loader/manifest.h"
#include "formats/shard/loader/manifest_fields.h"
#include "formats/shard/loader/manifest_layout.h"

namespace slimpack::loader::internal {

// Parses top["tensors"] into m->tensors and m->tensor_index, then checks
// storage order, packing and shard coverage. Needs m->shards. Each non-plain
// layout object goes to *pending (the tensor gets a provisional non-plain
// kind) and each "sparsity" record to *pending_sparsity, by tensor index.
Status ParseTensors(const Fields& top, Manifest* m, PendingLayouts* pending,
                    PendingLayouts* pending_sparsity);

}  // namespace slimpack::loader::internal

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_TENSORS_H_
