// PrepareForOnnxRuntime (see onnx_export.h): checks first, then the
// rewrites, then the domain check over the result.
#include "export/onnx_export.h"

#include <vector>

#include "export/onnx_graph_edit.h"
#include "export/onnx_qdq.h"
#include "ir/float_convert.h"
#include "support/status_macros.h"

namespace slimpack::onnx_export {
namespace {

absl::Status CheckDomains(const ir::Graph& graph, OnnxProfile profile) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& n = graph.nodes[i];
    const bool ok = n.domain.empty() || n.domain == "ai.onnx" ||
                    (profile == OnnxProfile::kOrt && n.domain == kMicrosoftDomain);
    if (!ok) {
      return absl::UnimplementedError(
          "node " + ir::DescribeNode(n, i) + " of domain '" + n.domain +
          "' cannot be exported: ONNX Runtime runs the default domain" +
          (profile == OnnxProfile::kOrt ? std::string(" and com.microsoft")
                                        : std::string(" (and com.microsoft with --onnx-profile ort)")));
    }
    for (const auto& [key, attr] : n.attributes) {
      if (attr.g) RETURN_IF_ERROR(Annotate(CheckDomains(*attr.g, profile), "in node '" + n.name + "'"));
      for (const auto& g : attr.graphs) {
        RETURN_IF_ERROR(Annotate(CheckDomains(*g, profile), "in node '" + n.name + "'"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> WidenHalfInitializers(ir::Graph& graph) {
  std::vector<std::string> names;
  for (const ir::Tensor& t : graph.initializers()) {
    if (t.dtype == ir::DType::kF16 || t.dtype == ir::DType::kBF16) names.push_back(t.name);
  }
  for (const std::string& name : names) {
    ir::Tensor* t = graph.FindMutableInitializer(name);
    ASSIGN_OR_RETURN(uint64_t numel, t->NumElements());
    std::vector<uint8_t> bytes(numel * sizeof(float));
    RETURN_IF_ERROR(Annotate(
        ir::ConvertFloats(t->dtype, t->data.data(), ir::DType::kF32, bytes.data(), numel),
        "tensor '" + name + "'"));
    t->dtype = ir::DType::kF32;
    t->data = ir::TensorData::Owned(std::move(bytes));
  }
  return static_cast<int64_t>(names.size());
}

bool HasQOperatorNodes(const ir::Model& model) {
  for (const ir::Node& n : model.graph.nodes) {
    if (n.domain.empty() && (n.op_type == "QLinearConv" || n.op_type == "MatMulInteger")) {
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<OnnxProfile> ParseOnnxProfile(const std::string& name) {
  if (name == "standard") return OnnxProfile::kStandard;
  if (name == "ort") return OnnxProfile::kOrt;
  return absl::InvalidArgumentError("'" + name + "' is not an ONNX profile (standard, ort)");
}

absl::StatusOr<QuantFormat> ParseQuantFormat(const std::string& name) {
  if (name == "qdq") return QuantFormat::kQdq;
  if (name == "qoperator") return QuantFormat::kQOperator;
  return absl::InvalidArgumentError("'" + name + "' is not a quantized ONNX encoding (qdq, qoperator)");
}

absl::StatusOr<OnnxExportReport> PrepareForOnnxRuntime(ir::Model& model,
                                                       const OnnxExportOptions& options) {
  OnnxExportReport report;
  ASSIGN_OR_RETURN(report.lower, LowerSlimpackOps(model, options.profile));
  ASSIGN_OR_RETURN(report.weights, ExportQuantizedWeights(model, options.profile));
  if (options.quant_format == QuantFormat::kQdq && options.raise_opset && HasQOperatorNodes(model)) {
    const auto it = model.opset_imports.find("");
    const int64_t opset = it == model.opset_imports.end() ? 0 : it->second;
    if (opset > 0 && opset < kQdqPerAxisOpset) {
      RETURN_IF_ERROR(Annotate(options.raise_opset(model, kQdqPerAxisOpset),
                               "raising opset " + std::to_string(opset) + " to " +
                                   std::to_string(kQdqPerAxisOpset) + " for QDQ"));
      report.opset_raised_from = opset;
    }
  }
  if (options.quant_format == QuantFormat::kQdq) {
    ASSIGN_OR_RETURN(report.qdq, ConvertToQdq(model));
  }
  RETURN_IF_ERROR(CheckDomains(model.graph, options.profile));
  if (options.widen_half_initializers) {
    ASSIGN_OR_RETURN(report.widened, WidenHalfInitializers(model.graph));
  }
  report.nodes = static_cast<int64_t>(model.graph.nodes.size());
  report.initializers = static_cast<int64_t>(model.graph.initializers().size());
  return report;
}

}  // namespace slimpack::onnx_export
