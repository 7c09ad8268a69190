// Window attribute checks. They run on the ModelProto, not the IR, because
// ONNX shape inference (formats/onnx/shape_inference.cc) runs before the
// graph is converted and would crash on what is rejected here; catching
// its exceptions cannot help with an integer division by zero.
#include "formats/onnx/window_attributes.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "formats/onnx/node_names.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {
namespace {

enum class WindowKind { kNone, kConv, kPool };

WindowKind KindOf(const onnx::NodeProto& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    return WindowKind::kNone;
  }
  const std::string& op = node.op_type();
  if (op == "Conv" || op == "ConvTranspose" || op == "ConvInteger" ||
      op == "QLinearConv") {
    return WindowKind::kConv;
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "LpPool" ||
      op == "MaxUnpool") {
    return WindowKind::kPool;
  }
  return WindowKind::kNone;
}

// ONNX's inference reads the ints field whatever the attribute's declared
// type, so the checks read it too.
struct WindowAttrs {
  const onnx::AttributeProto* kernel_shape = nullptr;
  const onnx::AttributeProto* strides = nullptr;
  const onnx::AttributeProto* dilations = nullptr;
  const onnx::AttributeProto* pads = nullptr;
  const onnx::AttributeProto* output_padding = nullptr;
};

absl::StatusOr<WindowAttrs> FindWindowAttrs(const onnx::NodeProto& node) {
  WindowAttrs w;
  for (const auto& a : node.attribute()) {
    const onnx::AttributeProto** slot =
        a.name() == "kernel_shape"     ? &w.kernel_shape
        : a.name() == "strides"        ? &w.strides
        : a.name() == "dilations"      ? &w.dilations
        : a.name() == "pads"           ? &w.pads
        : a.name() == "output_padding" ? &w.output_padding
                                       : nullptr;
    if (slot == nullptr) continue;
    // The IR conversion rejects this too, but only after inference, which
    // would have read one of the copies unchecked.
    if (*slot != nullptr) {
      return absl::InvalidArgumentError("attribute '" + a.name() +
                                        "' appears more than once");
    }
    *slot = &a;
  }
  return w;
}

absl::Status CheckMinimum(const onnx::AttributeProto* attr, int64_t minimum) {
  if (attr == nullptr) return absl::OkStatus();
  for (int i = 0; i < attr->ints_size(); ++i) {
    if (attr->ints(i) < minimum) {
      return absl::InvalidArgumentError(
          attr->name() + "[" + std::to_string(i) +
          "] = " + std::to_string(attr->ints(i)) + ", must be >= " +
          std::to_string(minimum));
    }
  }
  return absl::OkStatus();
}

// kernel_shape, strides, dilations and output_padding hold one value per
// spatial axis, pads two.
absl::Status CheckLengths(const WindowAttrs& w) {
  const onnx::AttributeProto* rank_from = nullptr;
  for (const onnx::AttributeProto* a :
       {w.kernel_shape, w.strides, w.dilations, w.output_padding}) {
    if (a == nullptr) continue;
    if (rank_from == nullptr) {
      rank_from = a;
    } else if (a->ints_size() != rank_from->ints_size()) {
      return absl::InvalidArgumentError(
          a->name() + " has " + std::to_string(a->ints_size()) + " values but " +
          rank_from->name() + " has " + std::to_string(rank_from->ints_size()) +
          "; both need one per spatial axis");
    }
  }
  if (w.pads == nullptr) return absl::OkStatus();
  if (w.pads->ints_size() % 2 != 0) {
    return absl::InvalidArgumentError(
        "pads has " + std::to_string(w.pads->ints_size()) +
        " values; it needs two per spatial axis (begins, then ends)");
  }
  if (rank_from != nullptr && w.pads->ints_size() != 2 * rank_from->ints_size()) {
    return absl::InvalidArgumentError(
        "pads has " + std::to_string(w.pads->ints_size()) + " values but " +
        rank_from->name() + " has " + std::to_string(rank_from->ints_size()) +
        "; pads needs " + std::to_string(2 * rank_from->ints_size()));
  }
  return absl::OkStatus();
}

// Runs after CheckMinimum and CheckLengths, so values are in range and
// lengths agree.
absl::Status CheckExtents(const WindowAttrs& w) {
  if (w.kernel_shape != nullptr) {
    for (int i = 0; i < w.kernel_shape->ints_size(); ++i) {
      const int64_t k = w.kernel_shape->ints(i);
      const int64_t d = w.dilations != nullptr ? w.dilations->ints(i) : 1;
      std::optional<int64_t> span = CheckedMulInt64(k - 1, d);
      if (span) span = CheckedAddInt64(*span, 1);
      if (!span) {
        return absl::InvalidArgumentError(
            "kernel_shape[" + std::to_string(i) + "] = " + std::to_string(k) +
            " with dilations[" + std::to_string(i) + "] = " + std::to_string(d) +
            " spans more than int64 can hold");
      }
    }
  }
  if (w.pads != nullptr) {
    const int r = w.pads->ints_size() / 2;
    for (int i = 0; i < r; ++i) {
      const int64_t begin = w.pads->ints(i), end = w.pads->ints(i + r);
      if (!CheckedAddInt64(begin, end)) {
        return absl::InvalidArgumentError(
            "pads[" + std::to_string(i) + "] + pads[" + std::to_string(i + r) +
            "] = " + std::to_string(begin) + " + " + std::to_string(end) +
            " overflows int64");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckWindowNode(const onnx::NodeProto& node, WindowKind kind) {
  ASSIGN_OR_RETURN(WindowAttrs w, FindWindowAttrs(node));
  if (kind == WindowKind::kPool && w.kernel_shape == nullptr) {
    return absl::InvalidArgumentError("has no kernel_shape, which " +
                                      node.op_type() + " requires");
  }
  // Values first, so a zero stride is reported as such even when the
  // lengths disagree as well.
  RETURN_IF_ERROR(CheckMinimum(w.kernel_shape, 1));
  RETURN_IF_ERROR(CheckMinimum(w.strides, 1));
  RETURN_IF_ERROR(CheckMinimum(w.dilations, 1));
  RETURN_IF_ERROR(CheckMinimum(w.pads, 0));
  RETURN_IF_ERROR(CheckMinimum(w.output_padding, 0));
  RETURN_IF_ERROR(CheckLengths(w));
  return CheckExtents(w);
}

}  // namespace

absl::Status ValidateWindowAttributes(const onnx::GraphProto& graph) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    absl::Status status;
    if (WindowKind kind = KindOf(node); kind != WindowKind::kNone) {
      status = CheckWindowNode(node, kind);
    }
    for (const auto& attr : node.attribute()) {
      if (!status.ok()) break;
      std::vector<const onnx::GraphProto*> subs;
      if (attr.has_g()) subs.push_back(&attr.g());
      for (const auto& g : attr.graphs()) subs.push_back(&g);
      for (const onnx::GraphProto* sub : subs) {
        status = ValidateWindowAttributes(*sub);
        if (!status.ok()) {
          status = Annotate(Annotate(status, "subgraph '" + sub->name() + "'"),
                            "attribute '" + attr.name() + "'");
          break;
        }
      }
    }
    if (!status.ok()) {
      // Named as the IR will name the node, so this error and later ones
      // about the same node agree; only computed on the error path.
      const std::vector<std::string> names =
          AssignUniqueNodeNames(graph, /*warnings=*/nullptr);
      return Annotate(status,
                      "node '" + names[i] + "' (" + node.op_type() + ")");
    }
  }
  return absl::OkStatus();
}

}  // namespace slimpack::onnx_format
