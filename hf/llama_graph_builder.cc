// The decoder graph, written to match HF transformers' modeling_llama /
// modeling_qwen2 in FP32. Shapes: the residual stream is kept as a 2-D
// [T = batch*seq, hidden] matrix so every linear layer is one Gemm with
// transB=1 on the untouched [out, in] weight (no transposed copy, and one
// BLAS call per projection). Only attention reshapes to 4-D.
//
// Grouped-query attention without repeating K/V: query heads h = j*rep + r
// share KV head j (HF repeat_kv), so Q [B, H, S, D] viewed as
// [B, KV, rep*S, D] is contiguous and one batched MatMul against K^T
// [B, KV, D, S] gives all scores. The mask add and softmax happen on the
// [B, H, S, S] view of the same buffer.
#include "hf/llama_graph_builder.h"

#include "hf/config_checks.h"
#include "hf/decoder_builder.h"
#include "support/status_macros.h"

namespace slimpack::hf {
namespace {

constexpr int64_t kOpset = 17;

absl::Status CheckArchitecture(const ir::Model& m) {
  if (!m.architecture) {
    return absl::FailedPreconditionError(
        m.source_path + ": no architecture (config.json) to build a decoder graph from");
  }
  const ir::ArchitectureInfo& a = *m.architecture;
  bool supported = false;
  std::string list;
  for (const std::string& t : SupportedModelTypes()) {
    supported |= t == a.model_type;
    list += (list.empty() ? "" : ", ") + t;
  }
  if (!supported) {
    return absl::UnimplementedError(m.source_path + ": model_type '" + a.model_type +
                                    "' has no graph builder (supported: " + list + ")");
  }
  // Before anything is sized from them: an artifact's manifest can hold
  // any number (head_dim 2^40 used to end in std::bad_alloc).
  return CheckDecoderSizes(m);
}

}  // namespace

std::vector<std::string> SupportedModelTypes() { return {"llama", "mistral", "qwen2"}; }

std::string PastName(int64_t layer, bool key) {
  return "past_key_values." + std::to_string(layer) + (key ? ".key" : ".value");
}

std::string PresentName(int64_t layer, bool key) {
  return "present." + std::to_string(layer) + (key ? ".key" : ".value");
}

absl::StatusOr<ir::Model> BuildDecoderGraph(const ir::Model& checkpoint,
                                            const DecoderGraphOptions& options) {
  RETURN_IF_ERROR(CheckArchitecture(checkpoint));
  if (options.group_query_attention) {
    if (!options.kv_cache) {
      return absl::InvalidArgumentError(
          "GroupQueryAttention is the KV-cache decoder's attention: it needs the cache inputs");
    }
    // ONNX Runtime's kernel refuses other head sizes at run time.
    if (checkpoint.architecture->head_dim % 8 != 0) {
      return absl::UnimplementedError(
          checkpoint.source_path + ": head_dim " +
          std::to_string(checkpoint.architecture->head_dim) + " (" +
          ArchitectureSourceLabel(*checkpoint.architecture) +
          ") is not a multiple of 8, which ONNX Runtime's GroupQueryAttention requires");
    }
  }
  ir::Model out;
  out.source_format = checkpoint.source_format;
  out.source_path = checkpoint.source_path;
  out.ir_version = 8;
  out.opset_imports[""] = kOpset;
  out.producer_name = "slimpack";
  out.architecture = checkpoint.architecture;
  out.input_files = checkpoint.input_files;
  out.carried_files = checkpoint.carried_files;
  out.carried_overrides = checkpoint.carried_overrides;
  out.metadata_props = checkpoint.metadata_props;
  out.warnings = checkpoint.warnings;
  RETURN_IF_ERROR(CheckUnsupportedOptions(checkpoint, out.warnings));
  decoder_internal::DecoderBuilder builder(checkpoint, options, out);
  RETURN_IF_ERROR(builder.Build());
  if (options.group_query_attention) out.opset_imports["com.microsoft"] = 1;
  size_t unused = 0;
  std::string example;
  for (const ir::Tensor& t : checkpoint.graph.initializers()) {
    if (out.graph.FindInitializer(t.name) == nullptr) {
      if (unused++ == 0) example = t.name;
    }
  }
  if (unused > 0) {
    out.warnings.push_back(std::to_string(unused) +
                           " checkpoint tensor(s) not used by the decoder graph, e.g. '" +
                           example + "'");
  }
  return out;
}

}  // namespace slimpack::hf
