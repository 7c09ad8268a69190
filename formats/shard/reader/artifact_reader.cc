// The loader validates and maps; this file only translates its Manifest
// into IR objects. All tensors share one owner that holds the Artifact and
// a view of every tensor (each view pins its shard mapping), so the IR's
// zero-copy TensorData stay valid after the caller drops everything else.
#include "formats/shard/reader/artifact_reader.h"

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "ir/quant.h"
#include "ir/verifier.h"
#include "hf/hf_config.h"
#include "formats/shard/loader/absl_adapter.h"
#include "formats/shard/loader/artifact.h"
#include "formats/shard/reader/quant_records.h"
#include "support/status_macros.h"

namespace slimpack::shard_reader {
namespace {

// Keeps the mappings alive for every TensorData of the model.
struct MappedArtifact {
  std::unique_ptr<loader::Artifact> artifact;
  std::vector<loader::TensorView> views;
};

absl::StatusOr<ir::DType> IrDType(std::string_view name, const std::string& what) {
  if (name == "undefined") return ir::DType::kUndefined;
  auto d = ir::DTypeFromName(name);
  if (!d) {
    return absl::InvalidArgumentError(what + ": unknown dtype '" + std::string(name) + "'");
  }
  return *d;
}

absl::StatusOr<ir::WeightRole> RoleFromName(const std::string& name,
                                            const std::string& tensor) {
  if (name.empty()) return ir::WeightRole::kUnknown;
  for (int r = 0; r <= static_cast<int>(ir::WeightRole::kBias); ++r) {
    const auto role = static_cast<ir::WeightRole>(r);
    if (ir::WeightRoleName(role) == name) return role;
  }
  return absl::InvalidArgumentError("tensor '" + tensor + "': unknown role '" + name + "'");
}

// "file@offset" / "file" part of a source string.
void ParseFilePart(const std::string& s, ir::Provenance* p) {
  const size_t at = s.rfind('@');
  const bool digits = at != std::string::npos && at + 1 < s.size() &&
                      s.find_first_not_of("0123456789", at + 1) == std::string::npos &&
                      s.size() - at - 1 <= 18;
  p->file = digits ? s.substr(0, at) : s;
  p->offset = digits ? std::stoll(s.substr(at + 1)) : -1;
}

// Inverse of Provenance::ToString as the writer stores it ("conv1",
// "fused[a,b]", "model.safetensors@4096", "conv1 model.onnx@12"). A lone
// token is a file only when it ends in "@<digits>" (the writer's
// file@offset form); otherwise it is a node name.
ir::Provenance ParseSource(const std::string& s) {
  ir::Provenance p;
  if (s.empty()) return p;
  std::string rest;
  if (s.rfind("fused[", 0) == 0 && s.find(']') != std::string::npos) {
    const size_t close = s.find(']');
    std::stringstream nodes(s.substr(6, close - 6));
    for (std::string n; std::getline(nodes, n, ',');) p.source_nodes.push_back(n);
    if (close + 2 <= s.size()) rest = s.substr(close + 2);
  } else if (const size_t sp = s.rfind(' '); sp != std::string::npos) {
    p.source_nodes.push_back(s.substr(0, sp));
    rest = s.substr(sp + 1);
  } else {
    ir::Provenance file;
    ParseFilePart(s, &file);
    if (file.offset >= 0) return file;
    p.source_nodes.push_back(s);
  }
  if (!rest.empty()) ParseFilePart(rest, &p);
  return p;
}

class ModelBuilder {
 public:
  ModelBuilder(std::shared_ptr<MappedArtifact> mapped,
               std::map<std::string, QuantRecord> records)
      : mapped_(std::move(mapped)), records_(std::move(records)),
        m_(mapped_->artifact->manifest()) {}

  absl::Status BuildTensors() {
    tensors_.reserve(m_.tensors.size());
    for (size_t i = 0; i < m_.tensors.size(); ++i) {
      const loader::TensorInfo& info = m_.tensors[i];
      const loader::TensorView& view = mapped_->views[i];
      ir::Tensor t;
      t.name = info.name;
      ASSIGN_OR_RETURN(t.dtype, IrDType(shard::DTypeName(info.dtype), "tensor '" + t.name + "'"));
      for (uint64_t d : info.shape) t.dims.push_back(static_cast<int64_t>(d));
      t.data = ir::TensorData::View(mapped_, view.data(), view.size());
      t.provenance = ParseSource(info.source);
      ASSIGN_OR_RETURN(t.role, RoleFromName(info.role, t.name));
      t.layer = static_cast<int>(info.layer);
      if (info.sparsity.present) {
        t.sparsity.pattern = info.sparsity.two_of_four ? ir::SparsityPattern::k2of4
                                                       : ir::SparsityPattern::kUnstructured;
        t.sparsity.axis = static_cast<int>(info.sparsity.axis);
        t.sparsity.criterion = info.sparsity.criterion;
      }
      if (info.layout.kind == shard::LayoutKind::kSparse2of4) {
        // Densified once here, so everything downstream (the interpreter,
        // report, re-conversion) sees an ordinary float weight; the record
        // stays on the tensor and a re-conversion packs it again.
        index_tensors_.insert(info.layout.indices);
        std::vector<uint8_t> dense(info.numel * (shard::DTypeBits(info.dtype) / 8));
        RETURN_IF_ERROR(loader::ToAbslStatus(
            mapped_->artifact->ExpandSparse(info.name, dense.data(), dense.size())));
        t.data = ir::TensorData::Owned(std::move(dense));
      } else if (info.layout.kind != shard::LayoutKind::kPlain) {
        ir::QuantLayout& q = t.quant;
        q.kind = info.layout.kind == shard::LayoutKind::kInt8PerChannel
                     ? ir::QuantKind::kInt8PerChannel
                 : info.layout.kind == shard::LayoutKind::kInt8GroupWise
                     ? ir::QuantKind::kInt8GroupWise
                     : ir::QuantKind::kInt4GroupWise;
        if (info.layout.kind == shard::LayoutKind::kFp8E4M3GroupWise) {
          q.kind = ir::QuantKind::kFp8E4M3GroupWise;
        }
        if (info.layout.kind == shard::LayoutKind::kGgmlBlocks) {
          q.kind = ir::QuantKind::kGgmlBlocks;
          q.block_type = static_cast<ir::GgmlType>(info.layout.block_type);
        }
        q.axis = info.layout.axis;
        q.group_size = static_cast<int64_t>(info.layout.group_size);
        if (info.layout.block_rows > 1) q.block_rows = static_cast<int64_t>(info.layout.block_rows);
        if (info.layout.scale >= 0) q.scale = m_.tensors[static_cast<size_t>(info.layout.scale)].name;
        if (info.layout.zero_point >= 0) {
          q.zero_point = m_.tensors[static_cast<size_t>(info.layout.zero_point)].name;
        }
        auto r = records_.find(t.name);
        if (r != records_.end()) {
          q.algorithm = r->second.algorithm;
          CheckRecord(t, r->second);
        }
      } else if (records_.count(t.name)) {
        warnings_.push_back("tensor '" + t.name +
                            "' has a quant record but a plain layout; the record is ignored");
      }
      tensors_.push_back(std::move(t));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<ir::Graph> Graph(const loader::Graph& lg) {
    ir::Graph g;
    g.name = lg.name;
    ASSIGN_OR_RETURN(g.inputs, Values(lg.inputs));
    ASSIGN_OR_RETURN(g.outputs, Values(lg.outputs));
    ASSIGN_OR_RETURN(std::vector<ir::ValueInfo> infos, Values(lg.value_info));
    for (ir::ValueInfo& v : infos) g.value_info[v.name] = std::move(v);
    for (int32_t i : lg.initializers) {
      RETURN_IF_ERROR(g.AddInitializer(tensors_[static_cast<size_t>(i)]));
    }
    for (const loader::Node& ln : lg.nodes) {
      ir::Node n;
      n.name = ln.name;
      n.op_type = ln.op_type;
      n.domain = ln.domain;
      n.inputs = ln.inputs;
      n.outputs = ln.outputs;
      n.provenance.source_nodes = ln.source;
      for (const auto& [key, la] : ln.attributes) {
        ASSIGN_OR_RETURN(n.attributes[key], Attr(la));
      }
      g.nodes.push_back(std::move(n));
    }
    return g;
  }

  // Non-fatal inconsistencies found while reading (shown by inspect).
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Safetensors-origin: every tensor is a weight of the main graph.
  absl::Status AllInitializers(ir::Graph& g) {
    for (size_t i = 0; i < tensors_.size(); ++i) {
      // 2:4 index tensors are storage, already folded into their weights.
      if (index_tensors_.count(static_cast<int32_t>(i))) continue;
      RETURN_IF_ERROR(g.AddInitializer(tensors_[i]));
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<std::vector<ir::ValueInfo>> Values(const std::vector<loader::GraphValue>& in) {
    std::vector<ir::ValueInfo> out;
    for (const loader::GraphValue& v : in) {
      ir::ValueInfo info;
      info.name = v.name;
      ASSIGN_OR_RETURN(info.dtype, IrDType(v.dtype, "value '" + v.name + "'"));
      if (v.rank_known) {
        std::vector<ir::Dim> dims;
        for (const loader::GraphDim& d : v.dims) {
          dims.push_back(d.value >= 0 ? ir::Dim::Static(d.value)
                                      : d.symbol.empty() ? ir::Dim{}
                                                         : ir::Dim::Symbolic(d.symbol));
        }
        info.shape = ir::Shape(std::move(dims));
      }
      out.push_back(std::move(info));
    }
    return out;
  }

  absl::StatusOr<ir::Attribute> Attr(const loader::Attribute& la) {
    using K = loader::Attribute::Kind;
    ir::Attribute a;
    a.kind = static_cast<ir::Attribute::Kind>(la.kind);
    switch (la.kind) {
      case K::kFloat:
        a.f = static_cast<float>(la.floats.at(0));
        break;
      case K::kInt:
        a.i = la.ints.at(0);
        break;
      case K::kString:
        a.s = la.strings.at(0);
        break;
      case K::kTensor:
        a.t = std::make_shared<ir::Tensor>(tensors_[static_cast<size_t>(la.tensors.at(0))]);
        break;
      case K::kGraph: {
        ASSIGN_OR_RETURN(ir::Graph g, Graph(*la.graphs.at(0)));
        a.g = std::make_shared<ir::Graph>(std::move(g));
        break;
      }
      case K::kFloats:
        for (double f : la.floats) a.floats.push_back(static_cast<float>(f));
        break;
      case K::kInts:
        a.ints = la.ints;
        break;
      case K::kStrings:
        a.strings = la.strings;
        break;
      case K::kTensors:
        for (int32_t i : la.tensors) {
          a.tensors.push_back(std::make_shared<ir::Tensor>(tensors_[static_cast<size_t>(i)]));
        }
        break;
      case K::kGraphs:
        for (const auto& lg : la.graphs) {
          ASSIGN_OR_RETURN(ir::Graph g, Graph(*lg));
          a.graphs.push_back(std::make_shared<ir::Graph>(std::move(g)));
        }
        break;
    }
    return a;
  }

  // The record is informational (the layout alone defines the values), so
  // a record that disagrees with the layout is a warning, not an error.
  void CheckRecord(const ir::Tensor& t, const QuantRecord& r) {
    const int64_t bits = ir::QuantBits(t);
    const int64_t group = ir::IsGroupWise(t.quant.kind) ||
                                  t.quant.kind == ir::QuantKind::kGgmlBlocks
                              ? t.quant.group_size
                              : 0;
    const bool symmetric = ir::IsSymmetricQuant(t.quant);
    if (r.bits != bits || r.group_size != group || r.symmetric != symmetric) {
      warnings_.push_back("tensor '" + t.name + "': quant record (bits " +
                          std::to_string(r.bits) + ", group_size " +
                          std::to_string(r.group_size) + ", symmetric " +
                          (r.symmetric ? "true" : "false") +
                          ") disagrees with its layout (bits " + std::to_string(bits) +
                          ", group_size " + std::to_string(group) + ", symmetric " +
                          (symmetric ? "true" : "false") + "); the layout is used");
    }
  }

  std::shared_ptr<MappedArtifact> mapped_;
  std::map<std::string, QuantRecord> records_;
  std::vector<std::string> warnings_;
  const loader::Manifest& m_;
  std::vector<ir::Tensor> tensors_;  // parallel to the manifest's
  std::set<int32_t> index_tensors_;  // sparse_2_4 index tensors
};

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<ir::Model> Read(const std::string& dir) {
  auto opened = loader::ToAbslStatusOr(loader::Artifact::Open(dir));
  if (!opened.ok()) return opened.status();
  auto mapped = std::make_shared<MappedArtifact>();
  mapped->artifact = *std::move(opened);
  loader::Artifact& a = *mapped->artifact;
  const loader::Manifest& m = a.manifest();
  mapped->views.reserve(a.num_tensors());
  for (size_t i = 0; i < a.num_tensors(); ++i) {
    ASSIGN_OR_RETURN(loader::TensorView v, loader::ToAbslStatusOr(a.GetTensor(i)));
    mapped->views.push_back(std::move(v));
  }
  const std::string manifest_path = dir + "/" + std::string(shard::kManifestFileName);
  ASSIGN_OR_RETURN(std::string text, ReadText(manifest_path));
  ASSIGN_OR_RETURN(auto records, ParseQuantRecords(text, manifest_path));

  ir::Model model;
  model.source_path = dir;
  model.input_files.push_back(manifest_path);
  for (const auto& s : m.shards) model.input_files.push_back(dir + "/" + s.file);
  for (const auto& c : m.carried_files) model.carried_files.push_back(dir + "/" + c.file);

  ModelBuilder builder(mapped, std::move(records));
  RETURN_IF_ERROR(builder.BuildTensors());
  if (m.onnx) {
    model.source_format = ir::SourceFormat::kOnnx;
    const loader::OnnxModelInfo& o = *m.onnx;
    model.ir_version = o.ir_version;
    model.opset_imports = o.opset_imports;
    model.producer_name = o.producer_name;
    model.producer_version = o.producer_version;
    model.model_domain = o.domain;
    model.model_version = o.model_version;
    model.doc_string = o.doc_string;
    model.metadata_props = o.metadata_props;
    ASSIGN_OR_RETURN(model.graph, builder.Graph(o.graph));
  } else {
    model.source_format = ir::SourceFormat::kSafetensors;
    // The manifest records no graph for checkpoints; name it after the
    // artifact as the importer names it after the checkpoint file.
    std::string base = dir;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    model.graph.name = base.substr(base.rfind('/') + 1);
    RETURN_IF_ERROR(builder.AllInitializers(model.graph));
  }
  if (m.architecture) {
    const loader::ArchitectureInfo& la = *m.architecture;
    ir::ArchitectureInfo info;
    // The numbers are the manifest's: errors about them must name it, not
    // the carried config.json (which only supplies the options below).
    info.source = ir::ArchitectureInfo::Source::kManifest;
    info.model_type = la.model_type;
    info.architectures = la.architectures;
    info.known = hf::IsKnownFamily(la.model_type);
    info.num_layers = la.num_layers;
    info.num_heads = la.num_heads;
    info.num_kv_heads = la.num_kv_heads;
    info.hidden_size = la.hidden_size;
    info.intermediate_size = la.intermediate_size;
    info.vocab_size = la.vocab_size;
    info.head_dim = la.head_dim;
    info.max_position_embeddings = la.max_position_embeddings;
    info.rope_theta = la.rope_theta;
    info.norm_eps = la.norm_eps;
    info.tie_word_embeddings = la.tie_word_embeddings;
    info.torch_dtype = la.torch_dtype;
    // The options the graph builder checks (rope_scaling, hidden_act...)
    // live only in config.json, so the carried copy is the one to read.
    auto config = a.CarriedFilePath(la.config_file);
    if (config.ok()) {
      ASSIGN_OR_RETURN(info.config_json, ReadText(config.value()));
    }
    model.architecture = std::move(info);
  }
  model.warnings = builder.warnings();
  RETURN_IF_ERROR(ir::VerifyModel(model));
  return model;
}

}  // namespace

bool LooksLikeArtifact(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  return ::lstat((path + "/" + std::string(shard::kManifestFileName)).c_str(), &st) == 0;
}

absl::StatusOr<ir::Model> ReadArtifactModel(const std::string& dir) {
  auto model = Read(dir);
  if (!model.ok()) {
    // Loader messages already start with the manifest path.
    const std::string msg(model.status().message());
    if (msg.rfind(dir, 0) == 0) return model.status();
    return Annotate(model.status(), dir);
  }
  return model;
}

}  // namespace slimpack::shard_reader
