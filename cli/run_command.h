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
};

// Exit code: 0 ok, 1 bad model/inputs/output path, 2 bad option values.
// Output entries are named after the graph outputs, with leading '/'
// removed (as numpy.savez/zipfile does).
int RunRun(const RunOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_RUN_COMMAND_H_
