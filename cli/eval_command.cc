// The eval subcommand: load, check ids against the vocabulary, score.
#include "cli/eval_command.h"

#include <chrono>
#include <cstdio>

#include "calibration/token_ids.h"
#include "eval/perplexity.h"
#include "eval/runnable_model.h"
#include "calibration/token_ids.h"
#include "runtime/interpreter.h"
#include "cli/exit_codes.h"
#include "runtime/kernels/fused_kernels.h"
#include "passes/use_packed_weights.h"
#include "nlohmann/json.hpp"

namespace slimpack::cli {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "slimpack eval: %s\n", std::string(s.message()).c_str());
  return kExitInputError;
}

}  // namespace

int RunEval(const EvalOptions& options) {
  if (options.threads < 1 || options.window < 0) {
    std::fprintf(stderr, "slimpack eval: --threads must be >= 1 and --window >= 2\n");
    return kExitUsage;
  }
  const auto start = std::chrono::steady_clock::now();
  auto model = eval::LoadRunnableModel(options.model);
  if (!model.ok()) return Fail(model.status());
  // Quantized weights stay packed in memory; the packed kernels compute
  // the same bits as the dequantized graph.
  if (auto packed = passes::UsePackedWeights(model->graph); !packed.ok()) {
    return Fail(packed.status());
  }
  auto tokens = calibration::LoadTokenIds(options.tokens);
  if (!tokens.ok()) return Fail(tokens.status());
  // Without config.json (ONNX) the vocabulary is unknown: negatives are
  // still refused, since Gather would wrap them to valid ids.
  absl::Status ids_ok =
      calibration::CheckTokenIds(*tokens, calibration::KnownVocabSize(*model), options.tokens);
  if (!ids_ok.ok()) return Fail(ids_ok);
  int64_t window = options.window;
  if (model->architecture && window == 0) window = model->architecture->max_position_embeddings;
  if (window == 0) {
    return Fail(absl::InvalidArgumentError(options.model +
                                           ": no max_position_embeddings; pass --window"));
  }
  const int64_t context = calibration::KnownMaxPositions(*model);
  if (context > 0 && window > context) {
    // Positions past the trained context give a perplexity of nothing the
    // model can do (and an L x L mask that grows with the window).
    return Fail(absl::InvalidArgumentError(
        "--window " + std::to_string(window) + " exceeds " + options.model +
        "'s max_position_embeddings " + std::to_string(context) + " (config.json)"));
  }
  runtime::InterpreterOptions iopts;
  // Artifacts hold the graph as the passes left it (slimpack-domain ops).
  iopts.num_threads = options.threads;
  // Only the outputs are wanted: a W8A8 graph's DequantizeLinear ->
  // activation -> QuantizeLinear chains run as byte lookups (same bytes).
  iopts.fuse_quantized_lookups = true;
  auto interp = runtime::Interpreter::Create(*model, iopts);
  if (!interp.ok()) return Fail(interp.status());
  eval::PerplexityOptions popts;
  popts.window = window;
  auto r = eval::ComputePerplexity(*interp, *tokens, popts);
  if (!r.ok()) return Fail(r.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.json) {
    nlohmann::ordered_json j = {
        {"model", options.model},
        {"tokens_file", options.tokens},
        {"protocol", "non-overlapping windows from token 0, each scored on its last W-1 "
                     "positions, trailing partial window dropped, PPL = exp(mean NLL)"},
        {"window", r->window},
        {"windows", r->windows},
        {"scored_tokens", r->scored_tokens},
        {"dropped_tokens", r->dropped_tokens},
        {"mean_nll", r->mean_nll},
        {"perplexity", r->perplexity},
        {"seconds", seconds},
    };
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("perplexity %.6f (mean NLL %.6f nats over %lld tokens: %lld windows of %lld, "
                "%lld trailing tokens dropped; %.2f s)\n",
                r->perplexity, r->mean_nll, static_cast<long long>(r->scored_tokens),
                static_cast<long long>(r->windows), static_cast<long long>(r->window),
                static_cast<long long>(r->dropped_tokens), seconds);
  }
  return kExitOk;
}

}  // namespace slimpack::cli
