#include "cli/progress_printer.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace slimpack::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Rate needs one unit done in a measurable time.
bool HasRate(const support::ProgressEvent& e, double elapsed_s) {
  return e.done > 0 && elapsed_s > 1e-6;
}

}  // namespace

ProgressMode ParseProgressMode(const std::string& flag) {
  if (flag == "json") return ProgressMode::kJson;
  if (flag == "none") return ProgressMode::kNone;
  return ProgressMode::kAuto;
}

std::string ProgressText(const support::ProgressEvent& e, double elapsed_s) {
  std::string line = e.stage;
  if (!e.context.empty()) absl::StrAppend(&line, " (", e.context, ")");
  absl::StrAppend(&line, ": ", e.done);
  if (e.total > 0) absl::StrAppend(&line, "/", e.total);
  absl::StrAppend(&line, " ", e.unit);
  if (HasRate(e, elapsed_s)) {
    const double rate = static_cast<double>(e.done) / elapsed_s;
    absl::StrAppend(&line, absl::StrFormat(", %.2f %s/s", rate, e.unit));
    if (e.total > 0) {
      const double eta = static_cast<double>(e.total - e.done) / rate;
      absl::StrAppend(&line, absl::StrFormat(", ETA %.0f s", std::ceil(eta)));
    }
  }
  return line;
}

std::string ProgressJson(const support::ProgressEvent& e, double elapsed_s) {
  nlohmann::json j;
  j["stage"] = e.stage;
  if (!e.context.empty()) j["context"] = e.context;
  j["done"] = e.done;
  j["total"] = e.total;
  j["unit"] = e.unit;
  j["elapsed_s"] = std::round(elapsed_s * 1000.0) / 1000.0;
  if (HasRate(e, elapsed_s)) {
    const double rate = static_cast<double>(e.done) / elapsed_s;
    j["rate_per_s"] = std::round(rate * 1000.0) / 1000.0;
    if (e.total > 0) {
      j["eta_s"] = std::round(static_cast<double>(e.total - e.done) / rate * 1000.0) / 1000.0;
    }
  }
  return j.dump();
}

ProgressPrinter::ProgressPrinter(ProgressMode mode, bool stderr_is_tty)
    : mode_(mode), live_(mode == ProgressMode::kAuto && stderr_is_tty) {}

ProgressPrinter::~ProgressPrinter() { ClearLine(); }

support::ProgressSink ProgressPrinter::Sink() {
  if (mode_ == ProgressMode::kNone || (mode_ == ProgressMode::kAuto && !live_)) return nullptr;
  return [this](const support::ProgressEvent& e) { Print(e); };
}

void ProgressPrinter::ClearLine() {
  std::lock_guard<std::mutex> lock(mu_);
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  drawn_ = false;
}

std::function<void(const std::string&)> ProgressPrinter::LineSink() {
  return [this](const std::string& line) {
    ClearLine();
    std::fprintf(stderr, "%s\n", line.c_str());
  };
}

void ProgressPrinter::Print(const support::ProgressEvent& e) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Clock::now();
  // Each stage restarts its clock at done = 0 (every calibration pass does).
  if (e.done == 0 || !started_.count(e.stage)) started_[e.stage] = now;
  const double elapsed = std::chrono::duration<double>(now - started_[e.stage]).count();
  if (mode_ == ProgressMode::kJson) {
    std::fprintf(stderr, "%s\n", ProgressJson(e, elapsed).c_str());
    return;
  }
  // A terminal: redraw at most 10 times a second, always at a stage's end.
  const bool last = e.total > 0 && e.done == e.total;
  if (!last && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  std::fprintf(stderr, "\r\033[K%s", ProgressText(e, elapsed).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace slimpack::cli
