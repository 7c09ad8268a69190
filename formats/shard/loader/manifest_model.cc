// The manifest's "model" section (spec.md section 6): ONNX model fields
// (the graphs themselves are read by manifest_graph.cc) or Hugging Face
// architecture metadata.
#include "formats/shard/loader/manifest_model.h"

#include <string>

#include "formats/shard/loader/manifest_graph.h"

namespace slimpack::loader::internal {
namespace {

Status ParseOnnx(const Fields& model, Manifest* m) {
  SLP_ASSIGN_OR_RETURN(const JsonValue* v,
                       model.RequiredOf("onnx", JsonValue::Type::kObject));
  ObjectPath path{nullptr, "onnx", -1, {}, &model.path()};
  Fields f(*v, path);
  OnnxModelInfo info;
  SLP_ASSIGN_OR_RETURN(info.ir_version, f.Int("ir_version"));
  SLP_ASSIGN_OR_RETURN(const JsonValue* opsets,
                       f.RequiredOf("opset_imports", JsonValue::Type::kObject));
  for (const JsonValue& o : opsets->members()) {
    if (!o.is_int()) {
      return f.Error("opset_imports", "version of domain \"" + std::string(o.key()) +
                                          "\" must be an integer, found " +
                                          DescribeValue(o));
    }
    info.opset_imports[std::string(o.key())] = o.int_value();
  }
  SLP_ASSIGN_OR_RETURN(info.producer_name, f.OptionalString("producer_name", ""));
  SLP_ASSIGN_OR_RETURN(info.producer_version, f.OptionalString("producer_version", ""));
  SLP_ASSIGN_OR_RETURN(info.domain, f.OptionalString("domain", ""));
  SLP_ASSIGN_OR_RETURN(info.doc_string, f.OptionalString("doc_string", ""));
  if (const JsonValue* mv = f.Optional("model_version")) {
    if (!mv->is_int()) return f.Error("model_version", "expected an integer");
    info.model_version = mv->int_value();
  }
  if (const JsonValue* props = f.Optional("metadata_props")) {
    if (!props->is_object()) return f.Error("metadata_props", "expected an object");
    for (const JsonValue& p : props->members()) {
      if (!p.is_string()) {
        return f.Error("metadata_props",
                       "value of \"" + std::string(p.key()) + "\" must be a string");
      }
      info.metadata_props[std::string(p.key())] = std::string(p.string_value());
    }
  }
  SLP_ASSIGN_OR_RETURN(const JsonValue* graph, f.Required("graph"));
  ObjectPath gpath{nullptr, "graph", -1, {}, &path};
  SLP_RETURN_IF_ERROR(ParseGraph(*graph, gpath, *m, &info.graph));
  m->onnx = std::move(info);
  return OkStatus();
}

Status ParseArchitecture(const Fields& model, const JsonValue& v, Manifest* m) {
  ObjectPath path{nullptr, "architecture", -1, {}, &model.path()};
  Fields f(v, path);
  if (!v.is_object()) return f.Error("", "expected an object, found " + DescribeValue(v));
  ArchitectureInfo a;
  SLP_ASSIGN_OR_RETURN(a.model_type, f.String("model_type"));
  SLP_ASSIGN_OR_RETURN(a.architectures, StringList(f, "architectures", false));
  SLP_ASSIGN_OR_RETURN(a.config_file, f.OptionalString("config_file", ""));
  SLP_ASSIGN_OR_RETURN(a.torch_dtype, f.OptionalString("torch_dtype", ""));
  const struct {
    const char* key;
    int64_t* out;
  } ints[] = {
      {"num_layers", &a.num_layers}, {"num_heads", &a.num_heads},
      {"num_kv_heads", &a.num_kv_heads}, {"hidden_size", &a.hidden_size},
      {"intermediate_size", &a.intermediate_size}, {"vocab_size", &a.vocab_size},
      {"head_dim", &a.head_dim},
      {"max_position_embeddings", &a.max_position_embeddings},
  };
  for (const auto& i : ints) {
    if (f.Optional(i.key) == nullptr) continue;
    uint64_t value = 0;
    SLP_ASSIGN_OR_RETURN(value, f.SafeUint(i.key));
    *i.out = static_cast<int64_t>(value);
  }
  if (f.Optional("rope_theta")) {
    SLP_ASSIGN_OR_RETURN(a.rope_theta, f.Number("rope_theta"));
  }
  if (f.Optional("norm_eps")) {
    SLP_ASSIGN_OR_RETURN(a.norm_eps, f.Number("norm_eps"));
  }
  if (f.Optional("tie_word_embeddings")) {
    SLP_ASSIGN_OR_RETURN(a.tie_word_embeddings, f.Bool("tie_word_embeddings"));
  }
  m->architecture = std::move(a);
  return OkStatus();
}

}  // namespace

Status ParseModel(const Fields& top, Manifest* m) {
  SLP_ASSIGN_OR_RETURN(const JsonValue* v,
                       top.RequiredOf("model", JsonValue::Type::kObject));
  ObjectPath path{top.path().file, "model"};
  Fields f(*v, path);
  SLP_ASSIGN_OR_RETURN(m->source_format, f.String("source_format"));
  if (m->source_format == "onnx") {
    SLP_RETURN_IF_ERROR(ParseOnnx(f, m));
  } else if (m->source_format != "safetensors") {
    return f.Error("source_format", "unknown source format \"" + m->source_format +
                                        "\" (supported: onnx, safetensors)",
                   StatusCode::kUnimplemented);
  }
  if (const JsonValue* arch = f.Optional("architecture")) {
    SLP_RETURN_IF_ERROR(ParseArchitecture(f, *arch, m));
  }
  return OkStatus();
}

}  // namespace slimpack::loader::internal
