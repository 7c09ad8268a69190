// `slimpack report --reference MODEL --candidate MODEL --data DATA -o DIR`:
// the accuracy-diff report (report/) of a compressed model
// against its reference, with optional CI gating (--gate).
#ifndef SLIMPACK_CLI_REPORT_COMMAND_H_
#define SLIMPACK_CLI_REPORT_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

namespace slimpack::cli {

struct ReportCommandOptions {
  std::string reference;
  std::string candidate;
  std::vector<std::string> data;       // dataset files/directories
  std::string output;                  // report directory
  std::string gate;                    // "e2e.kld<=0.03,layer.sqnr>=20"
  std::vector<std::string> input_map;  // MODEL_INPUT=ARRAY
  std::string labels;                  // label array in the data files ("" = "labels" if present)
  std::string calib;                   // calibration table (calib.json)
  int64_t max_batch = 32;
  int64_t max_runs = 0;
  int64_t sensitivity_runs = 2;
  int64_t fallback_layers = 3;
  int threads = 1;
  bool json = false;
  bool force = false;  // replace report files in a directory we did not write
  std::string progress = "auto";  // auto, json, none (cli/progress_printer.h)
};

// Writes DIR/report.{json,md,html}; prints report.md (or report.json with
// --json) to stdout. Output rules (support/output_path.h), checked before
// any model runs: DIR is created if absent; in an existing DIR the three
// files are replaced only if its report.json is a slimpack report
// ("format": "slimpack-report") or `force` is set (exit 1 naming the file
// and --force otherwise), and nothing else in DIR is touched; DIR and its
// three files must not be any of the inputs (models, their files, data,
// calibration table), compared by device and inode; each file is written
// atomically. Exit code: 0 ok (gate passed or none), 1 bad input
// (missing file, mismatched models, a gate metric this model lacks), 2 bad
// flags or a malformed/unknown gate rule, 3 a gate rule failed (each
// failed rule and its offending layers go to stderr).
int RunReport(const ReportCommandOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_REPORT_COMMAND_H_
