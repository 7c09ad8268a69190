// `slimpack run MODEL --inputs in.npz -o out.npz`: runs an ONNX model or HF
// checkpoint on named inputs and writes every graph output to .npz.
#ifndef SLIMPACK_CLI_RUN_COMMAND_H_
#define SLIMPACK_CLI_RUN_COMMAND_H_

#include <string>

namespace slimpack::cli {

struct RunOptions {
  std::string model;   // ONNX file or HF checkpoint (input "input_ids")
  std::string inputs;  // .npz (entries named like the graph inputs) or .npy
  std::string output;  // .npz to write
  int threads = 1;
  bool force = false;  // replace an existing file slimpack did not write
  bool verbose = false;  // to stderr: how the graph is computed (f16 in f32)
};

// Exit code: 0 ok, 1 bad model/inputs/output path, 2 bad option values.
// Output entries are named after the graph outputs, with leading '/'
// removed (as numpy.savez/zipfile does).
// Output rules (support/output_path.h), checked before any work and again
// before writing: the directory must be writable; an existing output is
// replaced only if slimpack wrote it (the .npz's zip comment,
// numpy::kNpzWriterComment) or `force` is set, never if it is a directory,
// link or special file, and never if it is one of the inputs (--inputs, the
// model and its files; compared by device and inode). Written atomically.
int RunRun(const RunOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_RUN_COMMAND_H_
