// Progress of a long stage: calibration forward passes, GPTQ layer by
// layer, the writer's files. Core code reports plain counts through a
// ProgressSink; the CLI turns them into a live line on a terminal or JSON
// lines for CI logs (cli/progress_printer.h), adding rates and ETAs. A
// stage reports done = 0 when it starts and done = total when it ends.
#ifndef SLIMPACK_SUPPORT_PROGRESS_H_
#define SLIMPACK_SUPPORT_PROGRESS_H_

#include <cstdint>
#include <functional>
#include <string>

namespace slimpack::support {

struct ProgressEvent {
  std::string stage;    // "calibration", "gptq", "write"
  int64_t done = 0;     // units finished so far
  int64_t total = 0;    // units in the stage (0: not known)
  std::string unit;     // "runs", "layers", "files"
  // What the stage serves ("gptq layer 3" for a calibration pass) or the
  // item just finished (the layer, the file written); may be empty.
  std::string context;
};

using ProgressSink = std::function<void(const ProgressEvent&)>;

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_PROGRESS_H_
