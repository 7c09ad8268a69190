// `slimpack eval MODEL --tokens FILE.npy`: perplexity of a model on a token
// stream with the pinned protocol of eval/perplexity.h.
#ifndef SLIMPACK_CLI_EVAL_COMMAND_H_
#define SLIMPACK_CLI_EVAL_COMMAND_H_

#include <cstdint>
#include <string>

namespace slimpack::cli {

struct EvalOptions {
  std::string model;   // HF checkpoint (dir/file/index) or ONNX file
  std::string tokens;  // .npy of i32/i64 ids, [n] or [rows, n]
  int64_t window = 0;  // 0: the model's max_position_embeddings
  int threads = 1;
  bool json = false;
};

// Prints the perplexity (text or JSON) to stdout; errors to stderr. Exit
// code: 0 ok, 1 bad model/tokens/window, 2 bad option values.
int RunEval(const EvalOptions& options);

}  // namespace slimpack::cli

#endif  // SLIMPACK_CLI_EVAL_COMMAND_H_
