// `slimpack calibrate MODEL --data DIR -o calib.json`: runs the model on a
// calibration dataset and writes a reusable activation-range table.
#ifndef SLIMPACK_CLI_CALIBRATE_COMMAND_H_
#define SLIMPACK_CLI_CALIBRATE_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

namespace slimpack::cli {

struct CalibrateOptions {
  std::string model;
  std::vector<std::string> data;       // directories and/or files
  std::string output;                  // calib.json
  std::string method = "minmax";       // minmax|moving_minmax|percentile|entropy|mse
  bool per_channel = false;
  int channel_axis = -1;               // -1: auto (1 for rank 4/5, else last)
  double percentile = 99.99;
  int num_bins = 4096;
  int entropy_levels = 128;
  int64_t max_batch = 32;              // rows per run when a file holds a batch
  std::vector<std::string> input_map;  // "model_input=array_name"
  int64_t random_samples = 0;          // --calib-random N (smoke runs only)
  uint64_t seed = 0;
  bool xtx = false;                    // also store X^T X per linear layer
  int threads = 1;
  std::vector<std::string> check_data;  // coverage check on other data
  bool verbose = false;
  bool force = false;  // replace an existing file that is not a calibration table
  // --imatrix: write an importance matrix (llama.cpp's .dat layout:
  // converter/imatrix_stats.h) for `convert --imatrix` instead of a range
  // table, averaged over `calib_samples` runs as `convert --algo imatrix
  // --calib` would.
  bool imatrix = false;
  // --hessians: GPTQ statistics (converter/hessian_stats.h) for `convert
  // --algo gptq --hessians`, over `calib_samples` runs.
  bool hessians = false;
  // --awq-inputs: AWQ's captured inputs (converter/awq_input_stats.h) for
  // `convert --algo awq --awq-inputs`, over `calib_samples` runs.
  bool awq_inputs = false;
  int64_t calib_samples = 64;
  // --progress auto|json|none (cli/progress_printer.h): calibration runs,
  // layer by layer where the statistics are (--hessians).
  std::string progress = "auto";
};

// Returns a process exit code (see exit_codes.h); errors go to stderr.
// Output rules (support/output_path.h), checked before any work and again
// before writing: the output's directory must be writable; an existing
// output is replaced only if it is a calibration table ("format":
// "slimpack-calibration") or `force` is set, never if it is a directory, a
// link or a special file, and never if it is one of the inputs (the model,
// its files, --data, --check-data; compared by device and inode). The table
// is written atomically.
int RunCalibrate(const CalibrateOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_CALIBRATE_COMMAND_H_
