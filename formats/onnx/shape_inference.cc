// Shape inference wrapper. ONNX's InferShapes throws on bad models and
// copies are expensive for big embedded weights, hence the payload stash
// and the catch-all.
#include "formats/onnx/shape_inference.h"

#include <exception>
#include <memory>

#include "formats/onnx/window_attributes.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

namespace slimpack::onnx_format {
namespace {

using google::protobuf::RepeatedField;

// Tensors at most this large keep their data in the inference copy: shape
// inference reads the values of small constants (Reshape shapes, Slice
// starts) but never those of weights.
constexpr size_t kKeepPayloadBytes = 4096;
// Long ONNX messages are cut so a warning stays one readable line.
constexpr size_t kMaxWarningChars = 600;

// Moves large tensor payloads out of a graph (recursively) and swaps them
// back on destruction. Swapping keeps the original string buffers, and the
// caller only copies the model while they are out.
class PayloadStash {
 public:
  explicit PayloadStash(onnx::GraphProto* graph) { StashGraph(graph); }
  ~PayloadStash() {
    for (auto& s : stashed_) {
      if (s->had_raw) s->tensor->mutable_raw_data()->swap(s->raw);
      s->tensor->mutable_float_data()->Swap(&s->floats);
      s->tensor->mutable_int32_data()->Swap(&s->int32s);
      s->tensor->mutable_int64_data()->Swap(&s->int64s);
      s->tensor->mutable_double_data()->Swap(&s->doubles);
      s->tensor->mutable_uint64_data()->Swap(&s->uint64s);
    }
  }
  PayloadStash(const PayloadStash&) = delete;
  PayloadStash& operator=(const PayloadStash&) = delete;

 private:
  struct Stashed {
    onnx::TensorProto* tensor = nullptr;
    bool had_raw = false;
    std::string raw;
    RepeatedField<float> floats;
    RepeatedField<int32_t> int32s;
    RepeatedField<int64_t> int64s;
    RepeatedField<double> doubles;
    RepeatedField<uint64_t> uint64s;
  };

  static size_t PayloadBytes(const onnx::TensorProto& t) {
    return t.raw_data().size() + 4 * size_t(t.float_data_size()) +
           4 * size_t(t.int32_data_size()) + 8 * size_t(t.int64_data_size()) +
           8 * size_t(t.double_data_size()) + 8 * size_t(t.uint64_data_size());
  }

  // ONNX's data propagation reads every int32/int64 tensor of rank <= 1 it
  // meets as a possible shape (and throws if the data is gone), so those
  // stay whatever their size; they are small next to the weights.
  static bool MayHoldShape(const onnx::TensorProto& t) {
    return t.dims_size() <= 1 &&
           (t.data_type() == onnx::TensorProto::INT64 ||
            t.data_type() == onnx::TensorProto::INT32);
  }

  void StashTensor(onnx::TensorProto* t) {
    if (PayloadBytes(*t) <= kKeepPayloadBytes || MayHoldShape(*t)) return;
    auto s = std::make_unique<Stashed>();
    s->tensor = t;
    s->had_raw = t->has_raw_data();
    if (s->had_raw) s->raw.swap(*t->mutable_raw_data());
    s->floats.Swap(t->mutable_float_data());
    s->int32s.Swap(t->mutable_int32_data());
    s->int64s.Swap(t->mutable_int64_data());
    s->doubles.Swap(t->mutable_double_data());
    s->uint64s.Swap(t->mutable_uint64_data());
    stashed_.push_back(std::move(s));
  }

  void StashGraph(onnx::GraphProto* g) {
    for (auto& t : *g->mutable_initializer()) StashTensor(&t);
    for (auto& node : *g->mutable_node()) {
      for (auto& attr : *node.mutable_attribute()) {
        if (attr.has_t()) StashTensor(attr.mutable_t());
        for (auto& t : *attr.mutable_tensors()) StashTensor(&t);
        if (attr.has_g()) StashGraph(attr.mutable_g());
        for (auto& sub : *attr.mutable_graphs()) StashGraph(&sub);
      }
    }
  }

  std::vector<std::unique_ptr<Stashed>> stashed_;
};

bool RunInference(onnx::ModelProto* model, bool strict, std::string* error) {
  try {
    onnx::ShapeInferenceOptions options(/*check_type_val=*/false,
                                        /*strict_mode_val=*/strict ? 1 : 0,
                                        /*data_prop_val=*/true);
    onnx::shape_inference::InferShapes(
        *model, onnx::OpSchemaRegistry::Instance(), options);
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
  } catch (...) {
    *error = "unknown exception";
  }
  if (error->size() > kMaxWarningChars) {
    error->resize(kMaxWarningChars);
    *error += "...";
  }
  for (char& c : *error) {
    if (c == '\n') c = ' ';
  }
  return false;
}

bool LacksShape(const onnx::ValueInfoProto& vi) {
  return !vi.has_type() ||
         (vi.type().has_tensor_type() && !vi.type().tensor_type().has_shape());
}

// Copies what inference learned from `inferred` into `original`, which has
// the same structure (inference adds no nodes or attributes).
void MergeInferred(const onnx::GraphProto& inferred,
                   onnx::GraphProto* original) {
  *original->mutable_value_info() = inferred.value_info();
  if (inferred.output_size() == original->output_size()) {
    for (int i = 0; i < original->output_size(); ++i) {
      if (LacksShape(original->output(i)) && inferred.output(i).has_type()) {
        *original->mutable_output(i)->mutable_type() =
            inferred.output(i).type();
      }
    }
  }
  if (inferred.node_size() != original->node_size()) return;
  for (int n = 0; n < original->node_size(); ++n) {
    const auto& inferred_node = inferred.node(n);
    auto* node = original->mutable_node(n);
    if (inferred_node.attribute_size() != node->attribute_size()) continue;
    for (int a = 0; a < node->attribute_size(); ++a) {
      const auto& from = inferred_node.attribute(a);
      auto* to = node->mutable_attribute(a);
      if (from.has_g() && to->has_g()) MergeInferred(from.g(), to->mutable_g());
      if (from.graphs_size() != to->graphs_size()) continue;
      for (int g = 0; g < to->graphs_size(); ++g) {
        MergeInferred(from.graphs(g), to->mutable_graphs(g));
      }
    }
  }
}

}  // namespace

void InferShapesInPlace(onnx::ModelProto* model,
                        std::vector<std::string>* warnings) {
  // libonnx divides by strides without checking them; a zero stride kills
  // the process, so a model failing these checks is never handed to it.
  // ImportOnnx refuses such models first; this guards any other caller.
  if (absl::Status s = ValidateWindowAttributes(model->graph()); !s.ok()) {
    warnings->push_back("shape inference skipped: " + std::string(s.message()));
    return;
  }
  onnx::ModelProto stripped;
  {
    PayloadStash stash(model->mutable_graph());
    stripped = *model;
  }
  onnx::ModelProto inferred = stripped;
  std::string error;
  if (!RunInference(&inferred, /*strict=*/true, &error)) {
    warnings->push_back("shape inference failed, keeping partial shapes: " +
                        error);
    // A strict run stops at the first error; the lenient one skips failing
    // nodes and infers the rest.
    inferred = std::move(stripped);
    std::string lenient_error;
    if (!RunInference(&inferred, /*strict=*/false, &lenient_error)) {
      warnings->push_back("shape inference failed: " + lenient_error);
      return;
    }
  }
  MergeInferred(inferred.graph(), model->mutable_graph());
}

}  // namespace slimpack::onnx_format
