// Draws the counts long stages report (support/progress.h) for a person or
// a CI log: `--progress auto` draws one live line on a terminal (stage,
// i/N, rate, ETA) and nothing when stderr is not one; `json` prints one JSON
// object per event, one per line; `none` prints nothing.
#ifndef SLIMPACK_CLI_PROGRESS_PRINTER_H_
#define SLIMPACK_CLI_PROGRESS_PRINTER_H_

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "support/progress.h"

namespace slimpack::cli {

enum class ProgressMode { kAuto, kJson, kNone };

// "auto", "json" or "none" (the CLI checks the flag's value first).
ProgressMode ParseProgressMode(const std::string& flag);

// What one event prints, `elapsed_s` after its stage last reported done = 0:
//   calibration (gptq layer 3): 5/8 runs, 2.10 runs/s, ETA 1 s
//   {"stage":"calibration","context":"gptq layer 3","done":5,"total":8,
//    "unit":"runs","elapsed_s":2.381,"rate_per_s":2.1,"eta_s":1.43}
// Rate and ETA are left out until there is one unit done in measurable time
// (ETA also when the total is unknown).
std::string ProgressText(const support::ProgressEvent& e, double elapsed_s);
std::string ProgressJson(const support::ProgressEvent& e, double elapsed_s);

class ProgressPrinter {
 public:
  // `stderr_is_tty` decides what kAuto draws.
  ProgressPrinter(ProgressMode mode, bool stderr_is_tty);
  ~ProgressPrinter();

  // Null when this printer prints nothing, so callers skip the counting.
  support::ProgressSink Sink();
  // Clears a live line before other output goes to stderr.
  void ClearLine();
  // Stage and -v lines for stderr: each clears a live line first.
  std::function<void(const std::string&)> LineSink();

 private:
  void Print(const support::ProgressEvent& e);

  const ProgressMode mode_;
  const bool live_;
  std::mutex mu_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
  // Start of each stage, set by its done = 0 event.
  std::map<std::string, std::chrono::steady_clock::time_point> started_;
};

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_PROGRESS_PRINTER_H_
