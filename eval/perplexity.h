// Perplexity with a pinned protocol, so numbers are comparable across runs,
// models and compression settings:
//   - the token stream is cut into non-overlapping windows of W tokens from
//     its start; a trailing partial window is dropped;
//   - each window is scored independently (no context carried over) on its
//     last W-1 positions: NLL of token t+1 given tokens 0..t;
//   - log-softmax and all sums are accumulated in double;
//   - PPL = exp(mean NLL over all scored positions).
#ifndef SLIMPACK_EVAL_PERPLEXITY_H_
#define SLIMPACK_EVAL_PERPLEXITY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/interpreter.h"
#include "runtime/rt_tensor.h"

namespace slimpack::eval {

struct PerplexityOptions {
  int64_t window = 0;             // W, >= 2
  int64_t windows_per_batch = 4;  // windows run together as one [b, W] batch
  int64_t vocab = 0;              // if > 0, ids are checked against it first
};

struct PerplexityResult {
  int64_t window = 0;
  int64_t windows = 0;
  int64_t scored_tokens = 0;   // windows * (W - 1)
  int64_t dropped_tokens = 0;  // trailing partial window
  double mean_nll = 0;         // nats
  double perplexity = 0;
};

// Sum over t < W-1 of -log softmax(logits[t])[ids[t+1]] for one window's
// logits [W, vocab] (f32 values, double accumulation).
double WindowNll(const float* logits, const int64_t* ids, int64_t window, int64_t vocab);

// Runs `model` (input "input_ids" i64 [b, W] -> first output logits f32
// [b, W, vocab]) over `tokens`. InvalidArgument if W < 2, if there are fewer
// than W tokens, if the logits have an unexpected shape, or naming the
// index and value of an id outside [0, vocab) (options.vocab, else the
// logits' last dim).
absl::StatusOr<PerplexityResult> ComputePerplexity(const runtime::Interpreter& model,
                                                   const std::vector<int64_t>& tokens,
                                                   const PerplexityOptions& options);

}  // namespace slimpack::eval

#endif  // SLIMPACK_EVAL_PERPLEXITY_H_
