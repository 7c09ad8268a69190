// The one table of passes (name, summary, options with defaults), pass
// creation from a textual spec, and the default pipeline per input kind.
// Every pass is listed by hand in registry.cc; nothing self-registers.
#ifndef SLIMPACK_PASSES_REGISTRY_H_
#define SLIMPACK_PASSES_REGISTRY_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace slimpack::passes {

struct PassOptionInfo {
  std::string name;
  std::string default_value;
  std::string description;
};

// Option values by name, as written in a spec.
using PassOptionValues = std::map<std::string, std::string>;

struct PassInfo {
  std::string name;     // "fuse-bn-into-conv"
  std::string summary;  // one line, for --help and docs
  std::vector<PassOptionInfo> options;
  // Builds the pass from validated option values (every key is one of
  // `options`). InvalidArgument naming the option on a bad value.
  absl::StatusOr<std::unique_ptr<Pass>> (*create)(const PassOptionValues&);
};

// Every pass, in documentation order.
std::vector<PassInfo> AllPasses();
std::optional<PassInfo> FindPass(std::string_view name);

// A spec split into the pass name and the option values it sets.
struct PassSpec {
  std::string name;
  PassOptionValues values;
};

// Parses "name" or "name{key=value key=value}" and checks the name and
// option keys against the table (errors as for CreatePass; values are not
// checked until the pass is created).
absl::StatusOr<PassSpec> ParsePassSpec(std::string_view spec);

// Creates a pass from "name" or "name{key=value key=value}" (MLIR's
// textual pipeline syntax). InvalidArgument naming the spec for an unknown
// pass (with the list of known ones), an unknown option (with the pass's
// options), malformed braces, or a bad value.
absl::StatusOr<std::unique_ptr<Pass>> CreatePass(std::string_view spec);

// Splits "a,b{k=v},c" at the top-level commas.
std::vector<std::string> SplitPipeline(std::string_view pipeline);

// The pipeline `slimpack convert` runs when the recipe names none.
std::vector<std::string> DefaultPipeline(ir::SourceFormat input_kind);

}  // namespace slimpack::passes

#endif  // SLIMPACK_PASSES_REGISTRY_H_
