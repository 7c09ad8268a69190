// Opset upgrade through ONNX's version converter. The converter works on a
// copy of the graph in ONNX's own IR and throws on anything it cannot
// handle; weights are kept out of that copy (see UpgradeOpset).
#include "formats/onnx/opset_upgrade.h"

#include <exception>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {
namespace {

// Long converter messages are cut so an error stays one readable line.
constexpr size_t kMaxMessageChars = 600;

std::string OneLine(std::string s) {
  if (s.size() > kMaxMessageChars) {
    s.resize(kMaxMessageChars);
    s += "...";
  }
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

// Sends std::cerr to a string for its lifetime: the converter prints its
// warnings there, and a library must not write to the user's terminal.
// One capture at a time (two interleaved ones could restore each other's
// dead buffer), so conversions in parallel imports take turns.
class CerrCapture {
 public:
  CerrCapture() : lock_(Mutex()), old_(std::cerr.rdbuf(captured_.rdbuf())) {}
  ~CerrCapture() { std::cerr.rdbuf(old_); }
  CerrCapture(const CerrCapture&) = delete;
  CerrCapture& operator=(const CerrCapture&) = delete;
  std::string text() const { return captured_.str(); }

 private:
  static std::mutex& Mutex() {
    static std::mutex* mu = new std::mutex;
    return *mu;
  }
  std::lock_guard<std::mutex> lock_;
  std::ostringstream captured_;
  std::streambuf* old_;
};

int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") return opset.version();
  }
  return -1;
}

// A graph input standing for initializer `t` (its type and shape).
onnx::ValueInfoProto InputFor(const onnx::TensorProto& t) {
  onnx::ValueInfoProto vi;
  vi.set_name(t.name());
  auto* tensor = vi.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(t.data_type());
  auto* shape = tensor->mutable_shape();
  for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  return vi;
}

// Opset <= 6 binary ops broadcast B onto A from `axis` when broadcast=1.
// ONNX 1.12's adapter to opset 7 pads B with rank(A) - rank(B) trailing
// ones whatever `axis` is (and with none when A's rank is unknown), which
// is only right when axis == rank(A) - rank(B): e.g. a bias Add(x[N,C,H,W],
// b[C]) with axis=1 would come out as b[C,1,1,1] and broadcast wrongly. So
// these nodes are rewritten here first: B gets an Unsqueeze of rank(A) -
// axis - rank(B) trailing axes (ranks from shape inference) and the node
// loses broadcast/axis, which the adapter then leaves alone.
bool IsLegacyBroadcast(const onnx::NodeProto& node) {
  static const std::set<std::string> kOps = {"Add", "Sub",  "Mul",   "Div",     "Pow", "And",
                                             "Or",  "Xor",  "Equal", "Greater", "Less"};
  if (!(node.domain().empty() || node.domain() == "ai.onnx") || !kOps.count(node.op_type())) {
    return false;
  }
  bool broadcast = false, axis = false;
  for (const auto& a : node.attribute()) {
    broadcast = broadcast || (a.name() == "broadcast" && a.i() != 0);
    axis = axis || a.name() == "axis";
  }
  return broadcast && axis && node.input_size() == 2;
}

bool HasLegacyBroadcastIn(const onnx::GraphProto& g) {
  for (const auto& node : g.node()) {
    if (IsLegacyBroadcast(node)) return true;
    for (const auto& a : node.attribute()) {
      if (a.has_g() && HasLegacyBroadcastIn(a.g())) return true;
      for (const auto& sub : a.graphs()) {
        if (HasLegacyBroadcastIn(sub)) return true;
      }
    }
  }
  return false;
}

// Rank of every top-level value shape inference reaches (lenient: a node
// it cannot infer only leaves its outputs out).
std::map<std::string, int> InferredRanks(const onnx::ModelProto& model) {
  onnx::ModelProto inferred = model;
  try {
    onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/0,
                                        /*data_prop_val=*/false);
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception&) {
    // Non-strict inference skips nodes it cannot infer; anything else it
    // throws leaves the ranks it had not reached unknown, which the caller
    // reports.
  }
  std::map<std::string, int> rank;
  auto note = [&rank](const onnx::ValueInfoProto& vi) {
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) {
      rank[vi.name()] = vi.type().tensor_type().shape().dim_size();
    }
  };
  for (const auto& vi : inferred.graph().input()) note(vi);
  for (const auto& vi : inferred.graph().value_info()) note(vi);
  for (const auto& vi : inferred.graph().output()) note(vi);
  return rank;
}

std::string Describe(const onnx::NodeProto& node) {
  return "node '" + node.name() + "' (" + node.op_type() + ")";
}

absl::Status RewriteLegacyBroadcast(onnx::ModelProto* model) {
  onnx::GraphProto* g = model->mutable_graph();
  bool top_level = false;
  for (const auto& node : g->node()) top_level = top_level || IsLegacyBroadcast(node);
  for (const auto& node : g->node()) {
    for (const auto& a : node.attribute()) {
      bool inside = a.has_g() && HasLegacyBroadcastIn(a.g());
      for (const auto& sub : a.graphs()) inside = inside || HasLegacyBroadcastIn(sub);
      if (inside) {
        return absl::UnimplementedError(Describe(node) +
                                        " has a subgraph with opset-6 broadcasting (broadcast=1 "
                                        "with an axis), which is not upgraded inside subgraphs");
      }
    }
  }
  if (!top_level) return absl::OkStatus();
  const std::map<std::string, int> rank = InferredRanks(*model);
  std::set<std::string> taken;
  for (const auto& node : g->node()) {
    taken.insert(node.name());
    taken.insert(node.output().begin(), node.output().end());
    taken.insert(node.input().begin(), node.input().end());
  }
  for (const auto& vi : g->input()) taken.insert(vi.name());
  auto fresh = [&taken](const std::string& base) {
    std::string name = base;
    for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
    taken.insert(name);
    return name;
  };
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const auto& original : g->node()) {
    onnx::NodeProto node = original;
    if (IsLegacyBroadcast(node)) {
      int64_t axis = 0;
      google::protobuf::RepeatedPtrField<onnx::AttributeProto> kept;
      for (const auto& a : node.attribute()) {
        if (a.name() == "axis") axis = a.i();
        if (a.name() != "axis" && a.name() != "broadcast") *kept.Add() = a;
      }
      node.mutable_attribute()->Swap(&kept);
      auto ra = rank.find(node.input(0)), rb = rank.find(node.input(1));
      if (ra == rank.end() || rb == rank.end()) {
        return absl::UnimplementedError(
            Describe(node) + " broadcasts with axis=" + std::to_string(axis) +
            " (opset-6 broadcasting) and the rank of '" +
            (ra == rank.end() ? node.input(0) : node.input(1)) + "' is unknown");
      }
      if (axis < 0) axis += ra->second;
      const int64_t trailing = ra->second - axis - rb->second;
      if (axis < 0 || trailing < 0) {
        return absl::InvalidArgumentError(Describe(node) + " broadcasts a rank-" +
                                          std::to_string(rb->second) + " input from axis " +
                                          std::to_string(axis) + " of a rank-" +
                                          std::to_string(ra->second) + " input");
      }
      if (trailing > 0) {
        onnx::NodeProto unsqueeze;
        unsqueeze.set_op_type("Unsqueeze");
        unsqueeze.set_name(fresh(node.name() + "_broadcast_axes"));
        unsqueeze.add_input(node.input(1));
        unsqueeze.add_output(fresh(node.input(1) + "_at_axis_" + std::to_string(axis)));
        auto* axes = unsqueeze.add_attribute();
        axes->set_name("axes");
        axes->set_type(onnx::AttributeProto::INTS);
        for (int64_t i = 0; i < trailing; ++i) axes->add_ints(rb->second + i);
        node.set_input(1, unsqueeze.output(0));
        *nodes.Add() = std::move(unsqueeze);
      }
    }
    *nodes.Add() = std::move(node);
  }
  g->mutable_node()->Swap(&nodes);
  return absl::OkStatus();
}

// InvalidArgument naming the graph and the value when a node input (not
// empty) is defined nowhere in `g` or the scopes around it (`outer`), or a
// graph output is not a node output, input or initializer of `g` itself;
// subgraphs are checked with `g`'s names as their outer scope. ONNX 1.12's
// import into its IR (graphProtoToGraph, the converter's first step)
// dereferences a null value for such a name, and its checker does not look
// at graph outputs (found by fuzz/onnx_fuzz.cc).
absl::Status CheckNamesDefined(const onnx::GraphProto& g, const std::set<std::string>& outer) {
  std::set<std::string> own;
  for (const auto& in : g.input()) own.insert(in.name());
  for (const auto& t : g.initializer()) own.insert(t.name());
  for (const auto& node : g.node()) {
    for (const std::string& out : node.output()) {
      if (!out.empty()) own.insert(out);
    }
  }
  std::set<std::string> visible = outer;
  visible.insert(own.begin(), own.end());
  const std::string where = "graph '" + g.name() + "': ";
  for (const auto& node : g.node()) {
    for (const std::string& in : node.input()) {
      if (!in.empty() && !visible.count(in)) {
        return absl::InvalidArgumentError(where + "node '" + node.name() + "' (" +
                                          node.op_type() + ") input '" + in +
                                          "' is not defined");
      }
    }
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) RETURN_IF_ERROR(CheckNamesDefined(attr.g(), visible));
      for (const auto& sub : attr.graphs()) RETURN_IF_ERROR(CheckNamesDefined(sub, visible));
    }
  }
  for (const auto& out : g.output()) {
    if (!own.count(out.name())) {
      return absl::InvalidArgumentError(where + "output '" + out.name() +
                                        "' is not an output of any node, input or initializer "
                                        "of the graph");
    }
  }
  return absl::OkStatus();
}

// Runs check + convert on `stripped`; the converted model, or the reason.
absl::Status Convert(const onnx::ModelProto& stripped, int64_t target,
                     onnx::ModelProto* converted, std::string* printed) {
  RETURN_IF_ERROR(CheckNamesDefined(stripped.graph(), {}));
  CerrCapture capture;
  std::string error;
  const char* stage = "onnx.checker";
  try {
    onnx::checker::check_model(stripped);
    onnx::ModelProto rewritten = stripped;
    if (DefaultOpset(stripped) < 7) {
      absl::Status s = RewriteLegacyBroadcast(&rewritten);
      if (!s.ok()) {
        *printed = capture.text();
        return s;
      }
    }
    // Adapters that depend on a rank (Softmax 12 -> 13 flattens at `axis`)
    // read it from value_info; lenient inference fills what it reaches.
    try {
      onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/0,
                                          /*data_prop_val=*/false);
      onnx::shape_inference::InferShapes(rewritten, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception&) {
      // A rank inference did not reach stays unknown; an adapter needing it
      // reports so below.
    }
    stage = "ONNX version converter";
    *converted = onnx::version_conversion::ConvertVersion(rewritten, static_cast<int>(target));
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "exception without a message";
  } catch (...) {
    error = "unknown exception";
  }
  *printed = capture.text();
  if (!error.empty()) return absl::UnimplementedError(stage + (": " + OneLine(error)));
  if (DefaultOpset(*converted) != target) {
    return absl::InternalError("the converter returned default-domain opset " +
                               std::to_string(DefaultOpset(*converted)) + ", not " +
                               std::to_string(target));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status UpgradeOpset(onnx::ModelProto* model, int64_t target,
                          std::vector<std::string>* warnings) {
  const int64_t from = DefaultOpset(*model);
  if (from < 0) {
    return absl::InvalidArgumentError("opset_import has no entry for the default ONNX domain");
  }
  if (from >= target) return absl::OkStatus();

  // The converter's view of the model: top-level initializers become graph
  // inputs of the same type and shape (adapters may read a rank, never a
  // weight), so the payloads stay in `weights` and are never copied.
  google::protobuf::RepeatedPtrField<onnx::TensorProto> weights;
  weights.Swap(model->mutable_graph()->mutable_initializer());
  std::set<std::string> declared;
  for (const auto& in : model->graph().input()) declared.insert(in.name());
  std::set<std::string> added;
  onnx::ModelProto stripped = *model;
  for (const auto& t : weights) {
    if (declared.count(t.name()) || !added.insert(t.name()).second) continue;
    *stripped.mutable_graph()->add_input() = InputFor(t);
  }
  weights.Swap(model->mutable_graph()->mutable_initializer());  // as it was
  // IR version 3 lets initializers double as inputs; the converter's import
  // then needs them listed, which they now are.
  onnx::ModelProto converted;
  std::string printed;
  absl::Status status = Convert(stripped, target, &converted, &printed);
  std::istringstream lines(printed);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) warnings->push_back("ONNX version converter: " + line);
  }
  if (!status.ok()) {
    return absl::Status(status.code(), "cannot upgrade default-domain opset " +
                                           std::to_string(from) + " to " +
                                           std::to_string(target) + ": " +
                                           std::string(status.message()));
  }

  // Back to the caller's model: the converted nodes and value types, the
  // original initializers (plus any the adapters created), the original
  // inputs.
  onnx::GraphProto* graph = converted.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (const auto& in : graph->input()) {
    if (!added.count(in.name())) *inputs.Add() = in;
  }
  graph->mutable_input()->Swap(&inputs);
  google::protobuf::RepeatedPtrField<onnx::TensorProto> created;
  created.Swap(graph->mutable_initializer());
  graph->mutable_initializer()->Swap(model->mutable_graph()->mutable_initializer());
  for (auto& t : created) *graph->add_initializer() = std::move(t);
  // PrepareOutput keeps the model-level fields the converter knows; keep
  // the ones it does not (functions, training info) as they were.
  *converted.mutable_functions() = model->functions();
  *converted.mutable_training_info() = model->training_info();
  model->Swap(&converted);
  return absl::OkStatus();
}

}  // namespace slimpack::onnx_format
