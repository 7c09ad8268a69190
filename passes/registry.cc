// The pass table and spec parsing (see registry.h).
#include "passes/registry.h"

#include "absl/strings/numbers.h"
#include "passes/cleanup/eliminate_dead_nodes.h"
#include "passes/fuse/fuse_attention.h"
#include "passes/cleanup/eliminate_duplicate_constants.h"
#include "passes/cleanup/eliminate_identity.h"
#include "passes/cleanup/eliminate_transpose_pair.h"
#include "passes/fold/fold_add_into_conv.h"
#include "passes/fold/fold_constants.h"
#include "passes/fold/fold_static_shapes.h"
#include "passes/fuse/fuse_bn_into_conv.h"
#include "passes/fuse/fuse_conv_activation.h"
#include "passes/fuse/fuse_gelu.h"
#include "passes/fuse/fuse_hardswish.h"
#include "passes/fuse/fuse_layernorm.h"
#include "passes/fuse/fuse_layernorm_gelu.h"
#include "passes/fuse/fuse_matmul_add.h"
#include "passes/fuse/fuse_rmsnorm.h"
#include "passes/fuse/fuse_silu.h"
#include "passes/lower/dequantize_integer_ops.h"
#include "passes/lower/widen_f16.h"
#include "support/status_macros.h"

namespace slimpack::passes {
namespace {

template <typename P>
absl::StatusOr<std::unique_ptr<Pass>> CreateSimple(const PassOptionValues&) {
  return std::unique_ptr<Pass>(std::make_unique<P>());
}

absl::StatusOr<std::unique_ptr<Pass>> CreateFoldConstants(
    const PassOptionValues& values) {
  FoldConstantsOptions options;
  auto it = values.find("max-output-bytes");
  if (it != values.end() &&
      (!absl::SimpleAtoi(it->second, &options.max_output_bytes) ||
       options.max_output_bytes < 0)) {
    return absl::InvalidArgumentError(
        "fold-constants: option max-output-bytes expects a non-negative "
        "integer, found '" + it->second + "'");
  }
  return std::unique_ptr<Pass>(std::make_unique<FoldConstantsPass>(options));
}

absl::StatusOr<std::unique_ptr<Pass>> CreateEliminateDuplicateConstants(
    const PassOptionValues& values) {
  EliminateDuplicateConstantsOptions options;
  auto it = values.find("max-bytes");
  if (it != values.end() &&
      (!absl::SimpleAtoi(it->second, &options.max_bytes) || options.max_bytes < 0)) {
    return absl::InvalidArgumentError(
        "eliminate-duplicate-constants: option max-bytes expects a non-negative "
        "integer, found '" + it->second + "'");
  }
  return std::unique_ptr<Pass>(
      std::make_unique<EliminateDuplicateConstantsPass>(options));
}

absl::StatusOr<std::unique_ptr<Pass>> CreateFuseMatMulAdd(const PassOptionValues& values) {
  FuseMatMulAddOptions options;
  auto it = values.find("batched");
  if (it != values.end()) {
    if (it->second != "true" && it->second != "false") {
      return absl::InvalidArgumentError(
          "fuse-matmul-add: option batched expects true or false, found '" + it->second + "'");
    }
    options.batched = it->second == "true";
  }
  return std::unique_ptr<Pass>(std::make_unique<FuseMatMulAddPass>(options));
}

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

std::vector<PassInfo> AllPasses() {
  return {
      {"eliminate-identity",
       "Remove Identity, inference Dropout, no-op Cast and no-op Reshape",
       {},
       CreateSimple<EliminateIdentityPass>},
      {"eliminate-dead-nodes",
       "Remove nodes and initializers that do not reach a graph output",
       {},
       CreateSimple<EliminateDeadNodesPass>},
      {"eliminate-transpose-pair",
       "Remove Transpose pairs that cancel; merge other pairs into one Transpose",
       {},
       CreateSimple<EliminateTransposePairPass>},
      {"eliminate-duplicate-constants",
       "Merge initializers with identical dtype, dims and bytes (CSE of constants)",
       {{"max-bytes", "256", "largest constant considered, in bytes"}},
       CreateEliminateDuplicateConstants},
      {"fold-static-shapes",
       "Replace Shape/Size/Gather(Shape) of statically known dims with constants",
       {},
       CreateSimple<FoldStaticShapesPass>},
      {"fold-constants",
       "Evaluate nodes whose inputs are all constants into initializers",
       {{"max-output-bytes", "1048576",
         "largest total size of one node's folded outputs"}},
       CreateFoldConstants},
      {"fold-add-into-conv",
       "Fold a per-channel constant Add after Conv into the Conv bias",
       {},
       CreateSimple<FoldAddIntoConvPass>},
      {"fuse-bn-into-conv",
       "Fold inference BatchNormalization into Conv/ConvTranspose/Gemm weights",
       {},
       CreateSimple<FuseBnIntoConvPass>},
      {"fuse-matmul-add",
       "Rewrite MatMul + constant bias Add as Gemm (2-D) or slimpack.MatMulAdd",
       {{"batched", "false",
         "also fuse batched/unknown-rank MatMuls as slimpack.MatMulAdd (hides them from "
         "the weight quantizers)"}},
       CreateFuseMatMulAdd},
      {"fuse-conv-activation",
       "Merge Relu/Clip/LeakyRelu/HardSwish/Sigmoid into slimpack.FusedConv/FusedGemm",
       {},
       CreateSimple<FuseConvActivationPass>},
      {"fuse-layernorm",
       "Rewrite the decomposed ReduceMean/Sub/Pow/.../Add pattern as LayerNormalization",
       {},
       CreateSimple<FuseLayerNormPass>},
      {"fuse-rmsnorm",
       "Rewrite the decomposed Pow/ReduceMean/Add/Sqrt/Div/Mul RMS norm as slimpack.RMSNorm",
       {},
       CreateSimple<FuseRmsNormPass>},
      {"fuse-hardswish",
       "Rewrite x*HardSigmoid(x) and x*Clip(x+3,0,6)/6 as HardSwish",
       {},
       CreateSimple<FuseHardSwishPass>},
      {"fuse-silu",
       "Rewrite x*Sigmoid(x) as slimpack.SiLU",
       {},
       CreateSimple<FuseSiluPass>},
      {"fuse-attention",
       "Rewrite MatMul/scale/mask Add/Softmax/MatMul attention as slimpack.Attention",
       {},
       CreateSimple<FuseAttentionPass>},
      {"fuse-gelu",
       "Rewrite erf- and tanh-form GELU subgraphs as one Gelu node",
       {},
       CreateSimple<FuseGeluPass>},
      {"fuse-layernorm-gelu",
       "Merge LayerNormalization + Gelu into slimpack.LayerNormGelu",
       {},
       CreateSimple<FuseLayerNormGeluPass>},
      {"widen-f16",
       "Compute a float16 graph in f32: f16 constants widened, f16 inputs/outputs cast at the "
       "boundary, Casts to f16 keep their rounding",
       {},
       CreateSimple<WidenF16Pass>},
      {"dequantize-integer-ops",
       "Rewrite ONNX Runtime's dynamic quantization (DynamicQuantizeLinear + "
       "MatMulInteger/ConvInteger + scale Muls) back to float MatMul/Conv",
       {},
       CreateSimple<DequantizeIntegerOpsPass>},
  };
}

std::optional<PassInfo> FindPass(std::string_view name) {
  for (PassInfo& info : AllPasses()) {
    if (info.name == name) return std::move(info);
  }
  return std::nullopt;
}

absl::StatusOr<PassSpec> ParsePassSpec(std::string_view spec) {
  std::string text = Trim(spec);
  std::string name = text;
  std::string body;
  size_t brace = text.find('{');
  if (brace != std::string::npos) {
    if (text.back() != '}') {
      return absl::InvalidArgumentError("pass spec '" + text +
                                        "': expected '}' at the end");
    }
    name = Trim(std::string_view(text).substr(0, brace));
    body = text.substr(brace + 1, text.size() - brace - 2);
  }
  std::optional<PassInfo> info = FindPass(name);
  if (!info) {
    std::string known;
    for (const PassInfo& p : AllPasses()) known += (known.empty() ? "" : ", ") + p.name;
    return absl::InvalidArgumentError("unknown pass '" + name + "' in spec '" +
                                      text + "'; known passes: " + known);
  }
  PassOptionValues values;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find(' ', pos);
    if (end == std::string::npos) end = body.size();
    std::string item = Trim(std::string_view(body).substr(pos, end - pos));
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError("pass spec '" + text + "': option '" +
                                        item + "' has no '=value'");
    }
    std::string key = item.substr(0, eq);
    bool known = false;
    std::string options;
    for (const PassOptionInfo& o : info->options) {
      known |= o.name == key;
      options += (options.empty() ? "" : ", ") + o.name;
    }
    if (!known) {
      return absl::InvalidArgumentError(
          "pass spec '" + text + "': unknown option '" + key + "'; " + name +
          " options: " + (options.empty() ? std::string("none") : options));
    }
    values[key] = item.substr(eq + 1);
  }
  return PassSpec{name, std::move(values)};
}

absl::StatusOr<std::unique_ptr<Pass>> CreatePass(std::string_view spec) {
  ASSIGN_OR_RETURN(PassSpec parsed, ParsePassSpec(spec));
  std::optional<PassInfo> info = FindPass(parsed.name);
  if (!info) return absl::InternalError("pass '" + parsed.name + "' vanished");
  return info->create(parsed.values);
}

std::vector<std::string> SplitPipeline(std::string_view pipeline) {
  std::vector<std::string> specs;
  int depth = 0;
  std::string current;
  for (char c : pipeline) {
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ',' && depth == 0) {
      if (!Trim(current).empty()) specs.push_back(Trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!Trim(current).empty()) specs.push_back(Trim(current));
  return specs;
}

std::vector<std::string> DefaultPipeline(ir::SourceFormat input_kind) {
  if (ir::IsDecoderCheckpoint(input_kind)) {
    // Graphs we build from checkpoints are already minimal.
    return {"eliminate-dead-nodes"};
  }
  // Cleanup first so fusions see canonical chains: static shape arithmetic
  // becomes constants that fold-constants finishes, and the second
  // eliminate-identity drops Reshapes whose target only then became
  // constant. Conv bias Adds fold first so BN folding reaches the Conv;
  // BN folding before activation fusion so Conv+BN+Relu becomes
  // one node; attention before fuse-matmul-add so its score MatMul stays
  // visible; HardSwish/SiLU are recognised before the activation fusion
  // that absorbs them; a final dead-node sweep drops absorbed parameters.
  return {"eliminate-identity",
          "fold-static-shapes",
          "fold-constants",
          "eliminate-identity",
          "eliminate-duplicate-constants",
          "eliminate-transpose-pair",
          "eliminate-dead-nodes",
          "fold-add-into-conv",
          "fuse-bn-into-conv",
          "fuse-attention",
          "fuse-matmul-add",
          "fuse-hardswish",
          "fuse-silu",
          "fuse-conv-activation",
          "fuse-layernorm",
          "fuse-rmsnorm",
          "fuse-gelu",
          "fuse-layernorm-gelu",
          "eliminate-dead-nodes"};
}

}  // namespace slimpack::passes
