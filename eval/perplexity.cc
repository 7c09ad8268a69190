// Window batching does not change the protocol: each row of a batch is an
// independent window (causal attention never looks across rows).
#include "eval/perplexity.h"

#include <algorithm>
#include <cmath>

#include "calibration/token_ids.h"
#include "support/status_macros.h"


namespace slimpack::eval {

double WindowNll(const float* logits, const int64_t* ids, int64_t window, int64_t vocab) {
  double total = 0;
  for (int64_t t = 0; t + 1 < window; ++t) {
    const float* row = logits + t * vocab;
    double mx = row[0];
    for (int64_t v = 1; v < vocab; ++v) mx = std::max(mx, static_cast<double>(row[v]));
    double z = 0;
    for (int64_t v = 0; v < vocab; ++v) z += std::exp(static_cast<double>(row[v]) - mx);
    total += mx + std::log(z) - static_cast<double>(row[ids[t + 1]]);
  }
  return total;
}

absl::StatusOr<PerplexityResult> ComputePerplexity(const runtime::Interpreter& model,
                                                   const std::vector<int64_t>& tokens,
                                                   const PerplexityOptions& options) {
  const int64_t w = options.window;
  if (w < 2) {
    return absl::InvalidArgumentError("perplexity window must be >= 2 tokens, got " +
                                      std::to_string(w));
  }
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n < w) {
    return absl::InvalidArgumentError("token stream has " + std::to_string(n) +
                                      " tokens, fewer than one window of " + std::to_string(w));
  }
  if (options.vocab > 0) RETURN_IF_ERROR(calibration::CheckTokenIds(tokens, options.vocab, "token stream"));
  PerplexityResult r;
  r.window = w;
  r.windows = n / w;
  r.dropped_tokens = n - r.windows * w;
  r.scored_tokens = r.windows * (w - 1);
  const int64_t per_batch = std::max<int64_t>(1, options.windows_per_batch);
  double total = 0;
  for (int64_t first = 0; first < r.windows; first += per_batch) {
    const int64_t b = std::min(per_batch, r.windows - first);
    const std::vector<int64_t> ids(tokens.begin() + first * w, tokens.begin() + (first + b) * w);
    auto out = model.Run({{"input_ids", runtime::RtTensor::FromVector<int64_t>({b, w}, ids)}});
    if (!out.ok()) {
      return Annotate(out.status(), "windows " + std::to_string(first) + ".." +
                                        std::to_string(first + b - 1));
    }
    const runtime::RtTensor& logits = out->front();
    if (logits.dtype() != ir::DType::kF32 || logits.rank() != 3 || logits.dim(0) != b ||
        logits.dim(1) != w || logits.dim(2) < 1) {
      return absl::InvalidArgumentError("model output " + logits.DebugString() +
                                        " is not f32 logits [" + std::to_string(b) + "," +
                                        std::to_string(w) + ",vocab]");
    }
    const int64_t vocab = logits.dim(2);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= vocab) {
        return absl::InvalidArgumentError(
            "token id at index " + std::to_string(first * w + static_cast<int64_t>(i)) + " is " +
            std::to_string(ids[i]) + ", outside the model's logits vocabulary [0, " +
            std::to_string(vocab) + ")");
      }
    }
    for (int64_t i = 0; i < b; ++i) {
      total += WindowNll(logits.data<float>() + i * w * vocab, ids.data() + i * w, w, vocab);
    }
  }
  r.mean_nll = total / static_cast<double>(r.scored_tokens);
  r.perplexity = std::exp(r.mean_nll);
  return r;
}

}  // namespace slimpack::eval
