// The optional per-tensor "sparsity" records of the manifest (spec.md
// section 5, "Sparsity"). Internal to the loader; parsed after the layouts,
// since a record's storage must agree with its tensor's layout.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_SPARSITY_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_SPARSITY_H_

#include "formats/shard/loader/manifest_layout.h"

namespace slimpack::loader::internal {

// Parses each pending record into m->tensors[i].sparsity, then checks that
// every sparse_2_4 tensor has one. InvalidArgument for a record that
// contradicts its tensor (storage vs layout, zeros above numel or below half
// for 2:4, ratio != zeros / numel, axis out of range, inputs not a multiple
// of 4, a quantized tensor with a zero point); Unimplemented for an unknown
// pattern or storage.
Status ParseSparsityRecords(const Fields& top, const PendingLayouts& pending, Manifest* m);

}  // namespace slimpack::loader::internal

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_SPARSITY_H_
