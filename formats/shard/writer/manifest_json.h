// Serialises manifest.json in the canonical form of spec.md sections 3-5:
// sorted keys, one-space indent, storage-ordered tensors, and the
// manifest_sha256 self-hash patched in last.
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_MANIFEST_JSON_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_MANIFEST_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "formats/shard/writer/sparse_tensors.h"
#include "nlohmann/json.hpp"

namespace slimpack::shard_writer {

struct NamedDigest {
  std::string file;  // base name, or a path relative to the model directory
  uint64_t size = 0;
  std::string sha256;
};

struct TensorEntry {
  std::string name;
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> dims;
  uint32_t shard = 0;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
  int64_t layer = -1;  // omitted when < 0
  ir::WeightRole role = ir::WeightRole::kUnknown;  // omitted when unknown
  std::string source;  // omitted when empty
  // Not quantized: layout "plain". Quantized: the layout object and the
  // "quant" record (spec.md section 5); checked against the stored scale /
  // zero-point entries when serialising.
  ir::QuantLayout quant;
  // Set for tensors a sparsifier marked: the "sparsity" record, and for a
  // packed one the sparse_2_4 layout (spec.md section 5, "Sparsity").
  std::optional<SparsityRecord> sparsity;
};

struct ManifestParts {
  nlohmann::json model;   // ModelJson
  nlohmann::json recipe;  // an object
  // Per-pass records (name, options, statistics; no timings) of the pipeline
  // that produced the model: producer.passes. An array; empty if none ran.
  nlohmann::json passes = nlohmann::json::array();
  std::string producer_version;
  std::string producer_commit;  // SourceCommit()
  std::vector<NamedDigest> calibration;  // in reading order; may be empty
  std::vector<NamedDigest> inputs;
  std::vector<NamedDigest> shards;   // in index order
  std::vector<NamedDigest> carried;  // any order; sorted by file here
  std::vector<TensorEntry> tensors;  // any order; storage-sorted here
};

// The exact bytes of manifest.json. Errors: InvalidArgument for an unsafe or
// duplicate file name (spec.md section 1), a string that is not UTF-8
// (naming its JSON path, e.g. model.onnx.graph.nodes[3].name), nesting
// deeper than 64, a quantized tensor whose layout disagrees with its scale /
// zero-point entries as stored (ir::ValidateQuantLayout: e.g. a scale cast
// to f16); ResourceExhausted if the manifest exceeds 16 MiB.
absl::StatusOr<std::string> SerializeManifest(const ManifestParts& parts);

// The canonical text of a manifest given as JSON (SerializeManifest's last
// step): nesting and UTF-8 checked, dumped, size-checked, self-hash patched
// in over whatever manifest_sha256 holds. Parsing a manifest and sealing it
// again gives the same bytes; `slimpack merge` builds one this way.
absl::StatusOr<std::string> SealManifest(const nlohmann::json& manifest);

// True if `name` may name a file in an artifact (spec.md section 1).
bool IsSafeArtifactFileName(const std::string& name);

// "model.safetensors@4096", "conv1", "fused[conv1,bn1]": Provenance with
// the file reduced to its base name (no absolute paths in the manifest).
std::string SourceString(const ir::Provenance& p);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_MANIFEST_JSON_H_
