// ConvertToQdq (see onnx_qdq.h): each QLinearConv / MatMulInteger chain is
// matched first (every condition checked before anything is emitted), then
// replaced by its QDQ form at the position of its first node.
#include "export/onnx_qdq.h"

#include <cstring>
#include <string>
#include <vector>

#include "export/onnx_graph_edit.h"
#include "support/status_macros.h"

namespace slimpack::onnx_export {
namespace {

std::string Describe(const ir::Node& n) { return "node '" + n.name + "' (" + n.op_type + ")"; }

absl::Status NotQdqable(const ir::Node& n, const std::string& why) {
  return absl::FailedPreconditionError(Describe(n) + ": cannot write as QDQ: " + why);
}

bool IsOp(const ir::Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// Number of elements of initializer `name` (-1 if it is not one).
int64_t Numel(const ir::Graph& g, const std::string& name) {
  const ir::Tensor* t = g.FindInitializer(name);
  if (t == nullptr) return -1;
  int64_t n = 1;
  for (int64_t d : t->dims) n *= d;
  return n;
}

// True when initializer `name` is absent (optional input) or all zero.
bool ZeroOrAbsent(const ir::Graph& g, const std::string& name) {
  if (name.empty()) return true;
  const ir::Tensor* t = g.FindInitializer(name);
  if (t == nullptr) return false;
  for (uint64_t i = 0; i < t->data.size(); ++i) {
    if (t->data.data()[i] != 0) return false;
  }
  return true;
}

bool IsInt8Weight(const ir::Graph& g, const std::string& name) {
  const ir::Tensor* t = g.FindInitializer(name);
  return t != nullptr && !t->quant.quantized() &&
         (t->dtype == ir::DType::kI8 || t->dtype == ir::DType::kU8);
}

// The single reader of `value`, or nullopt (none, several, or an output).
std::optional<size_t> SoleConsumer(const ir::Graph& g, const ir::UseDefIndex& idx,
                                   const std::string& value) {
  for (const ir::ValueInfo& o : g.outputs) {
    if (o.name == value) return std::nullopt;
  }
  auto it = idx.consumers.find(value);
  if (it == idx.consumers.end() || it->second.size() != 1) return std::nullopt;
  return it->second[0];
}

class QdqRewriter {
 public:
  QdqRewriter(const ir::Graph& src, ir::Graph& dst)
      : src_(src), idx_(src.BuildUseDefIndex()), ed_(dst), consumed_(src.nodes.size(), false) {}

  absl::StatusOr<QdqReport> Run() {
    QdqReport report;
    for (size_t i = 0; i < src_.nodes.size(); ++i) {
      if (consumed_[i]) continue;
      const ir::Node& n = src_.nodes[i];
      if (IsOp(n, "QLinearConv")) {
        RETURN_IF_ERROR(RewriteConv(n));
        ++report.convs;
      } else if (IsOp(n, "MatMulInteger")) {
        RETURN_IF_ERROR(RewriteMatMul(n));
        ++report.matmuls;
      } else {
        out_.push_back(n);
      }
    }
    ed_.graph().nodes = std::move(out_);
    RemoveUnusedInitializers(ed_.graph());
    return report;
  }

 private:
  std::string Dq(const ir::Node& origin, const std::string& x, const std::string& scale,
                 const std::string& zp, std::optional<int64_t> axis) {
    const std::string y = ed_.Fresh(x + "_dequantized");
    std::vector<std::string> in = {x, scale};
    if (!zp.empty()) in.push_back(zp);
    ir::Node d = MakeNode(ed_.Fresh(x + "_DequantizeLinear"), "DequantizeLinear", std::move(in),
                          {y}, origin.provenance);
    if (axis) d.attributes["axis"] = ir::Attribute::Int(*axis);
    out_.push_back(std::move(d));
    return y;
  }

  // DQ of an int8 weight with `scales` (1: per tensor; else along `axis`).
  absl::StatusOr<std::string> DqWeight(const ir::Node& origin, const std::string& w,
                                       const std::string& scale, int64_t scales, int64_t axis) {
    if (scales == 1) return Dq(origin, w, scale, "", std::nullopt);
    const ir::Tensor* t = src_.FindInitializer(w);
    ASSIGN_OR_RETURN(std::string zp, ed_.AddZeros8(w + "_zero_point_per_axis", t->dtype,
                                                   {scales}, t->provenance));
    return Dq(origin, w, scale, zp, axis);
  }

  absl::Status RewriteConv(const ir::Node& n) {
    if (n.inputs.size() < 8) return NotQdqable(n, "expects 8 or 9 inputs");
    const std::string &xq = n.inputs[0], &sx = n.inputs[1], &zx = n.inputs[2], &wq = n.inputs[3],
                      &sw = n.inputs[4], &zw = n.inputs[5], &sy = n.inputs[6], &zy = n.inputs[7];
    const std::string bq = n.inputs.size() > 8 ? n.inputs[8] : "";
    if (!IsInt8Weight(src_, wq)) return NotQdqable(n, "weight '" + wq + "' is not a constant int8 tensor");
    if (!ZeroOrAbsent(src_, zw)) return NotQdqable(n, "weight zero point '" + zw + "' is not 0");
    const int64_t m = src_.FindInitializer(wq)->dims.at(0);
    const int64_t scales = Numel(src_, sw);
    if (scales != 1 && scales != m) {
      return NotQdqable(n, "weight scale '" + sw + "' has " + std::to_string(scales) +
                               " elements for " + std::to_string(m) + " output channels");
    }
    ASSIGN_OR_RETURN(std::vector<float> sx_v, ReadF32Initializer(src_, sx, Describe(n) + " input scale"));
    ASSIGN_OR_RETURN(std::vector<float> sw_v, ReadF32Initializer(src_, sw, Describe(n) + " weight scale"));
    if (sx_v.size() != 1) return NotQdqable(n, "input scale '" + sx + "' is not a scalar");
    std::string bias_dq;
    if (!bq.empty()) {
      const ir::Tensor* b = src_.FindInitializer(bq);
      if (b == nullptr || b->dtype != ir::DType::kI32 || Numel(src_, bq) != m) {
        return NotQdqable(n, "bias '" + bq + "' is not a constant int32 tensor of " +
                                 std::to_string(m) + " elements");
      }
      // The product the int32 codes were computed with (QuantizeStatic:
      // s_x * s_w[m] in f32), so DQ(bias) is the bias the kernel added.
      std::vector<float> sb(m);
      for (int64_t i = 0; i < m; ++i) sb[i] = sx_v[0] * sw_v[scales == 1 ? 0 : i];
      ASSIGN_OR_RETURN(std::string sb_name, ed_.AddF32(bq + "_scale", {m}, sb, b->provenance));
      bias_dq = Dq(n, bq, sb_name, "", int64_t{0});
    }
    const std::string xd = Dq(n, xq, sx, zx, std::nullopt);
    ASSIGN_OR_RETURN(std::string wd, DqWeight(n, wq, sw, scales, 0));
    ir::Node conv = MakeNode(n.name, "Conv", {xd, wd}, {ed_.Fresh(n.outputs.at(0) + "_float")},
                             n.provenance);
    if (!bias_dq.empty()) conv.inputs.push_back(bias_dq);
    conv.attributes = n.attributes;
    const std::string y = conv.outputs[0];
    out_.push_back(std::move(conv));
    out_.push_back(MakeNode(ed_.Fresh(n.name + "_QuantizeLinear"), "QuantizeLinear", {y, sy, zy},
                            {n.outputs.at(0)}, n.provenance));
    return absl::OkStatus();
  }

  // The scale and zero point the producer of `xq` quantized it with.
  std::optional<std::string> InputScale(const std::string& xq) const {
    auto it = idx_.producer.find(xq);
    if (it == idx_.producer.end()) return std::nullopt;
    const ir::Node& p = src_.nodes[it->second];
    if (IsOp(p, "QuantizeLinear") && p.inputs.size() >= 2) return p.inputs[1];
    if (IsOp(p, "QLinearConv") && p.inputs.size() >= 8) return p.inputs[6];
    return std::nullopt;
  }

  absl::Status RewriteMatMul(const ir::Node& n) {
    if (n.inputs.size() < 2) return NotQdqable(n, "expects inputs (A, B[, a_zero_point])");
    const std::string& xq = n.inputs[0];
    const std::string& wq = n.inputs[1];
    const std::string zx = n.inputs.size() > 2 ? n.inputs[2] : "";
    if (!IsInt8Weight(src_, wq) || src_.FindInitializer(wq)->dims.size() != 2) {
      return NotQdqable(n, "B '" + wq + "' is not a constant 2-D int8 tensor");
    }
    if (n.inputs.size() > 3 && !ZeroOrAbsent(src_, n.inputs[3])) {
      return NotQdqable(n, "b_zero_point '" + n.inputs[3] + "' is not 0");
    }
    const int64_t cols = src_.FindInitializer(wq)->dims[1];
    // Walk acc -> [Add bias] -> Cast(FLOAT) -> Mul(scale).
    std::vector<size_t> chain;
    std::string value = n.outputs.at(0);
    std::string bias;
    auto next = SoleConsumer(src_, idx_, value);
    if (next && IsOp(src_.nodes[*next], "Add")) {
      const ir::Node& add = src_.nodes[*next];
      bias = add.inputs.at(0) == value ? add.inputs.at(1) : add.inputs.at(0);
      const ir::Tensor* b = src_.FindInitializer(bias);
      if (b == nullptr || b->dtype != ir::DType::kI32 || Numel(src_, bias) != cols) {
        return NotQdqable(n, "the accumulator's Add reads '" + bias +
                                 "', not a constant int32 bias of " + std::to_string(cols));
      }
      chain.push_back(*next);
      value = add.outputs.at(0);
      next = SoleConsumer(src_, idx_, value);
    }
    if (!next || !IsOp(src_.nodes[*next], "Cast") ||
        src_.nodes[*next].IntAttrOr("to", 0) != 1 /* FLOAT */) {
      return NotQdqable(n, "its int32 result '" + value + "' is not read only by a Cast to float");
    }
    chain.push_back(*next);
    value = src_.nodes[*next].outputs.at(0);
    next = SoleConsumer(src_, idx_, value);
    if (!next || !IsOp(src_.nodes[*next], "Mul")) {
      return NotQdqable(n, "the float result '" + value + "' is not read only by a scale Mul");
    }
    const ir::Node& mul = src_.nodes[*next];
    const std::string& ms = mul.inputs.at(0) == value ? mul.inputs.at(1) : mul.inputs.at(0);
    ASSIGN_OR_RETURN(std::vector<float> m, ReadF32Initializer(src_, ms, Describe(n) + " requantization scale"));
    if (static_cast<int64_t>(m.size()) != cols && m.size() != 1) {
      return NotQdqable(n, "scale '" + ms + "' has " + std::to_string(m.size()) +
                               " elements for " + std::to_string(cols) + " columns");
    }
    chain.push_back(*next);
    const std::optional<std::string> sx = InputScale(xq);
    if (!sx) {
      return NotQdqable(n, "the scale of its input '" + xq +
                               "' is unknown (not made by QuantizeLinear or QLinearConv)");
    }
    ASSIGN_OR_RETURN(std::vector<float> sx_v, ReadF32Initializer(src_, *sx, Describe(n) + " input scale"));
    if (sx_v.size() != 1 || !(sx_v[0] > 0)) return NotQdqable(n, "input scale '" + *sx + "' is not a positive scalar");

    // m = s_x * s_w: the weight scale is m / s_x (within an ulp of the
    // scale QuantizeStatic chose; the product is what the kernel used).
    const ir::Tensor* w = src_.FindInitializer(wq);
    std::vector<float> sw(m.size());
    for (size_t i = 0; i < m.size(); ++i) sw[i] = m[i] / sx_v[0];
    const int64_t scales = static_cast<int64_t>(m.size());
    ASSIGN_OR_RETURN(std::string sw_name,
                     ed_.AddF32(wq + "_scale", scales == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{scales},
                                sw, w->provenance));
    const std::string xd = Dq(n, xq, *sx, zx, std::nullopt);
    ASSIGN_OR_RETURN(std::string wd, DqWeight(n, wq, sw_name, scales, 1));
    const std::string& y = mul.outputs.at(0);
    if (bias.empty()) {
      out_.push_back(MakeNode(n.name, "MatMul", {xd, wd}, {y}, n.provenance));
    } else {
      const std::string mm = ed_.Fresh(y + "_matmul");
      out_.push_back(MakeNode(n.name, "MatMul", {xd, wd}, {mm}, n.provenance));
      const std::string bd = Dq(n, bias, ms, "", scales == 1 ? std::nullopt : std::optional<int64_t>(0));
      out_.push_back(MakeNode(ed_.Fresh(n.name + "_bias"), "Add", {mm, bd}, {y}, n.provenance));
    }
    for (size_t c : chain) consumed_[c] = true;
    return absl::OkStatus();
  }

  const ir::Graph& src_;
  const ir::UseDefIndex idx_;
  GraphEditor ed_;
  std::vector<bool> consumed_;
  std::vector<ir::Node> out_;
};

}  // namespace

absl::StatusOr<QdqReport> ConvertToQdq(ir::Model& model) {
  bool any = false;
  for (const ir::Node& n : model.graph.nodes) {
    any = any || IsOp(n, "QLinearConv") || IsOp(n, "MatMulInteger");
  }
  if (!any) return QdqReport{};
  auto it = model.opset_imports.find("");
  const int64_t opset = it == model.opset_imports.end() ? 0 : it->second;
  if (opset < kQdqPerAxisOpset) {
    return absl::FailedPreconditionError(
        "QDQ export writes per-channel weights as per-axis DequantizeLinear, which needs "
        "default-domain opset >= " + std::to_string(kQdqPerAxisOpset) + "; the model is opset " +
        std::to_string(opset) + " (use --onnx-quant-format qoperator)");
  }
  ir::Graph graph = model.graph;
  QdqRewriter rewriter(model.graph, graph);
  ASSIGN_OR_RETURN(QdqReport report, rewriter.Run());
  model.graph = std::move(graph);
  return report;
}

}  // namespace slimpack::onnx_export
