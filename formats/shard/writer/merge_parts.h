// A conversion split across machines (`slimpack convert --part I/N`,
// `slimpack merge`; docs/scale-out.md). Every part plans the whole
// artifact the same way, writes the shards AssignShardsToParts gives it
// (part 1 also the carried files and the input digests) and, instead of
// manifest.json, part.json:
//
//   {"format": "slimpack-part", "part": {"index": I, "count": N},
//    "shards": [indices it wrote], "carries_files": true|false,
//    "manifest": <the manifest a single run writes, except the digests of
//                 what other parts write: 64 zeros>}
//
// MergeParts checks that the parts belong together (same count, each index
// once, manifests equal but for those digests), copies every shard from
// the part that wrote it and the carried files from part 1, checking each
// file against the digest its part recorded, fills the digests in and
// writes the manifest: the artifact a single run writes, byte for byte.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_MERGE_PARTS_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_MERGE_PARTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace slimpack::shard_writer {

struct PartSpec {
  uint32_t index = 0;  // 0-based; `--part I/N` is 1-based
  uint32_t count = 1;
};
inline constexpr char kPartFileName[] = "part.json";
inline constexpr char kPartFormat[] = "slimpack-part";
// More parts than this is a typo, not a cluster.
inline constexpr uint32_t kMaxParts = 4096;

struct MergeSummary {
  std::string output;
  uint32_t parts = 0;
  uint32_t shards = 0;
  uint64_t bytes = 0;  // shard and carried-file bytes copied
  bool replaced = false;
};

// Joins `part_dirs` (in any order) into the artifact `output`, atomically
// (spec.md section 8: preflight, staging, manifest last, one rename);
// `force` replaces an existing artifact. Errors name the part directory and
// the field: InvalidArgument (not a part, parts of different conversions,
// a part missing or given twice, a shard written by no part or by two),
// DataLoss (a copied file differs from the digest its part recorded),
// NotFound, and the output rules' errors. On error the output is untouched.
absl::StatusOr<MergeSummary> MergeParts(const std::vector<std::string>& part_dirs,
                                        const std::string& output, bool force);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_MERGE_PARTS_H_
