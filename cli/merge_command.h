// `slimpack merge PARTS... -o OUT`: joins the parts of a conversion split
// across machines (`convert --part I/N`) into the artifact one run writes
// (formats/shard/writer/merge_parts.h, docs/scale-out.md).
#ifndef SLIMPACK_CLI_MERGE_COMMAND_H_
#define SLIMPACK_CLI_MERGE_COMMAND_H_

#include <string>
#include <vector>

namespace slimpack::cli {

struct MergeOptions {
  std::vector<std::string> parts;
  std::string output;
  bool force = false;
};

// 0 merged; 1 with a message naming the part and the field when the parts
// do not belong together, one is missing or damaged, or the output rules
// refuse.
int RunMerge(const MergeOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_MERGE_COMMAND_H_
