#include "cli/merge_command.h"

#include <chrono>
#include <cstdio>

#include "cli/exit_codes.h"
#include "formats/shard/writer/merge_parts.h"
#include "support/format_bytes.h"

namespace slimpack::cli {

int RunMerge(const MergeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto done = shard_writer::MergeParts(options.parts, options.output, options.force);
  if (!done.ok()) {
    std::fprintf(stderr, "slimpack merge: %s\n", done.status().ToString().c_str());
    return kExitInputError;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s %s from %u parts: %u shards, %s copied and checked in %.2f s\n",
              done->replaced ? "replaced" : "wrote", done->output.c_str(), done->parts,
              done->shards, support::FormatBytes(done->bytes).c_str(), seconds);
  return kExitOk;
}

}  // namespace slimpack::cli
