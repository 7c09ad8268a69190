// Runs the convert pipeline (import, float cast, write) the way the CLI
// does, and opens the result with the standalone loader.
#ifndef SLIMPACK_TESTS_SHARD_WRITER_CONVERT_HELPERS_H_
#define SLIMPACK_TESTS_SHARD_WRITER_CONVERT_HELPERS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/float_convert.h"
#include "formats/import.h"
#include "converter/recipe.h"
#include "formats/shard/loader/absl_adapter.h"
#include "formats/shard/loader/artifact.h"
#include "formats/shard/writer/artifact_writer.h"
#include "support/status_macros.h"

namespace slimpack::shard_writer::testing {

struct ConvertArgs {
  std::optional<ir::DType> dtype;
  uint64_t shard_size = kDefaultShardSize;
  int threads = 2;
  bool force = false;
  std::function<void(std::string_view, uint64_t)> fault_hook;
};

inline ConvertArgs Args(std::optional<ir::DType> dtype,
                        uint64_t shard_size = kDefaultShardSize,
                        int threads = 2) {
  ConvertArgs a;
  a.dtype = dtype;
  a.shard_size = shard_size;
  a.threads = threads;
  return a;
}

inline absl::StatusOr<ArtifactSummary> Convert(const std::string& input,
                                               const std::string& output,
                                               const ConvertArgs& args = {}) {
  ASSIGN_OR_RETURN(ir::Model model, formats::ImportModel(input));
  converter::Recipe recipe;
  recipe.dtype = args.dtype;
  recipe.shard_size = args.shard_size;
  ArtifactOptions options;
  options.shard_size = args.shard_size;
  options.threads = args.threads;
  options.force = args.force;
  options.encoder = shard_writer::FloatCastEncoder(args.dtype);
  options.recipe = converter::RecipeToJson(recipe);
  options.fault_hook = args.fault_hook;
  return WriteArtifact(model, output, options);
}

inline absl::StatusOr<std::unique_ptr<loader::Artifact>> OpenArtifact(
    const std::string& dir) {
  return loader::ToAbslStatusOr(loader::Artifact::Open(dir));
}

// Open + full Verify.
inline absl::Status OpenAndVerify(const std::string& dir) {
  ASSIGN_OR_RETURN(auto a, OpenArtifact(dir));
  return loader::ToAbslStatus(a->Verify());
}

}  // namespace slimpack::shard_writer::testing

#endif  // SLIMPACK_TESTS_SHARD_WRITER_CONVERT_HELPERS_H_
