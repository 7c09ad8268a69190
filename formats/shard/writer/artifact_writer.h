// Writes an ir::Model as a slimpack shard artifact (formats/shard/spec.md):
// plans layer-grouped shards, streams every tensor through the encoder
// chunk by chunk on a thread pool, copies carried files, digests inputs, and
// commits atomically (manifest last, staging directory swapped into place).
//
// Memory: tensors are streamed in kChunkBytes pieces and the input pages of
// each piece are released after it is written, so the writer's own peak
// memory is about threads x 16 MiB plus the manifest, whatever the model
// size (tensor bytes the importer holds in memory are on top of that).
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_ARTIFACT_WRITER_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_ARTIFACT_WRITER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "formats/shard/writer/manifest_json.h"
#include "formats/shard/writer/merge_parts.h"
#include "formats/shard/writer/shard_plan.h"
#include "formats/shard/writer/tensor_encoder.h"
#include "nlohmann/json.hpp"

namespace slimpack::shard_writer {

struct WriteProgress {
  uint64_t bytes_done = 0;   // shard and carried-file bytes written so far
  uint64_t bytes_total = 0;
  uint32_t files_done = 0;   // shard and carried files finished
  uint32_t files_total = 0;
  std::string_view last_file;  // the file just finished, or empty
};

struct ArtifactOptions {
  uint64_t shard_size = kDefaultShardSize;  // cap per shard file, bytes
  int threads = 0;                          // 0: hardware concurrency
  bool force = false;                       // replace an existing artifact
  TensorEncoder encoder;                    // default: store as imported
  // Store plain float 2:4-sparse tensors (ir::SparsityInfo) in the packed
  // sparse_2_4 layout (spec.md section 5, "Sparsity"); false: dense.
  bool pack_sparse_2_4 = true;
  // Recorded verbatim as producer.recipe; must be a JSON object.
  nlohmann::json recipe = nlohmann::json::object();
  // Recorded verbatim as producer.passes; must be a JSON array (one object
  // per pass run: name, options, statistics; never timings, which would
  // make artifacts differ between identical runs).
  nlohmann::json passes = nlohmann::json::array();
  // The calibration data the artifact was built from, in the order it was
  // read: {file (base name), size, sha256} objects, recorded as
  // producer.calibration when not empty.
  std::vector<NamedDigest> calibration;
  // Called (serialised, never concurrently) after every write of at least
  // 1 MiB and whenever a file is finished.
  std::function<void(const WriteProgress&)> progress;
  // Write only this part of the artifact (PartSpec, merge_parts.h): its
  // shards (part 0 also the carried files and input digests) and part.json
  // instead of manifest.json. Unset: all of it.
  std::optional<PartSpec> part;
  // Test-only fault injection: called with the phase name at
  // "staging-created", "shard-written", "carried-written",
  // "manifest-written", "before-swap", "swapped", "committed", and with
  // "bytes" plus the running byte count after every write. May be called
  // from worker threads.
  std::function<void(std::string_view phase, uint64_t bytes)> fault_hook;
};

struct ArtifactSummary {
  std::string output;
  uint64_t tensors = 0;
  uint32_t shards = 0;
  uint64_t shard_bytes = 0;    // sum of shard file sizes
  uint64_t carried_bytes = 0;
  uint64_t input_bytes = 0;    // bytes of input files digested
  uint64_t manifest_bytes = 0;
  bool replaced = false;       // an existing artifact was replaced
};

// Writes `model` as an artifact directory at `output`.
//
// Before any work: PreflightOutput (output usable; replacing needs
// `force`), inputs not inside the output, the manifest's model record
// under the loader's rules (ModelJson: graph dims, architecture counts),
// the plan, and free space for it.
// Errors name the file, tensor and numbers: InvalidArgument (bad tensor or
// graph dim,
// unsafe carried-file name, bad shard size), AlreadyExists /
// FailedPrecondition (output exists), NotFound / PermissionDenied (paths),
// ResourceExhausted (no space: the file and bytes), DataLoss (an input
// changed while read). On any error the staging directory is removed and
// the output is untouched.
absl::StatusOr<ArtifactSummary> WriteArtifact(const ir::Model& model,
                                              const std::string& output,
                                              const ArtifactOptions& options);

// The names of the tensors part options.part of `model`'s artifact writes,
// planned as WriteArtifact plans them (no file is touched), and of the
// quantized weights whose scale or zero point it writes: what one part of a
// split conversion has to compute. InvalidArgument without a part or for
// one that does not exist; StoredTensors' and PlanShards' errors.
absl::StatusOr<std::set<std::string>> TensorsOfPart(const ir::Model& model,
                                                  const ArtifactOptions& options);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_ARTIFACT_WRITER_H_
