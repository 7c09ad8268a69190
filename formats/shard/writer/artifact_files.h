// The files an artifact names besides its shards (spec.md section 3): the
// input files it records (named relative to the model directory) and the
// files it carries (tokenizer, config: copied, or written from memory).
#ifndef SLIMPACK_FORMATS_SHARD_WRITER_ARTIFACT_FILES_H_
#define SLIMPACK_FORMATS_SHARD_WRITER_ARTIFACT_FILES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::shard_writer {

struct CarriedFile {
  std::string path;
  std::string name;
  uint64_t size = 0;
  // ir::Model::carried_overrides: written instead of copying `path`.
  const std::string* bytes = nullptr;
};

struct InputFile {
  std::string path;
  std::string name;  // relative to the model directory
  uint64_t size = 0;
};

// model.carried_files and carried_overrides, checked: each name a safe
// artifact file name, not a shard's, not carried twice. InvalidArgument
// naming the file; stat errors.
absl::StatusOr<std::vector<CarriedFile>> CarriedFiles(const ir::Model& model);

// model.input_files by name, sizes from stat (regular files only).
absl::StatusOr<std::vector<InputFile>> InputFiles(const ir::Model& model);

}  // namespace slimpack::shard_writer

#endif  // SLIMPACK_FORMATS_SHARD_WRITER_ARTIFACT_FILES_H_
