#include "export/gguf_blocks.h"

#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "export/gguf_carried_codes.h"
#include "export/gguf_encode.h"
#include "export/gguf_llama_plan.h"
#include "formats/gguf/ggml_blocks.h"
#include "hf/input_perm.h"
#include "hf/weight_roles.h"
#include "ir/float_convert.h"
#include "support/input_pages.h"
#include "support/status_macros.h"

namespace slimpack::gguf_export {
namespace {

// One weight to encode: where its values come from (rows in HF order),
// the type, the importance row (or null) and its size.
struct BlockJob {
  Planned p;
  TensorType type = TensorType::kF32;
  const float* columns = nullptr;
  int64_t rows = 0, cols = 0;
  uint64_t numel = 0;
};

// The blocks of `job` (input pages given back as read when `pages` is
// set). The same function encodes eagerly and when the writer asks, so the
// bytes are the same either way.
uint64_t JobBytes(const BlockJob& job) {
  return static_cast<uint64_t>(gguf::RowBytes(job.type, job.cols) * job.rows);
}

// The job of deferred tensor `t`; Internal when it has none.
absl::StatusOr<const BlockJob*> FindJob(const std::map<std::string, BlockJob>& jobs,
                                        const ir::Tensor& t) {
  auto it = jobs.find(t.name);
  if (it == jobs.end()) {
    return absl::InternalError("tensor '" + t.name + "' is deferred but has no ggml job");
  }
  return &it->second;
}

absl::StatusOr<ir::TensorData> EncodeJob(const BlockJob& job, int threads,
                                         const support::InputPages* pages) {
  const uint64_t size = JobBytes(job);
  // Every byte is written by the encoder: no zero-filling first (a vector
  // would, at an eighth of a q8_0 conversion's time).
  std::shared_ptr<uint8_t[]> bytes(new uint8_t[size]);
  RETURN_IF_ERROR(Annotate(EncodeTensor(job.p, job.type, job.rows, job.cols, job.columns, threads,
                                        pages, bytes.get(), size),
                           "tensor '" + job.p.source->name + "'"));
  const uint8_t* data = bytes.get();
  return ir::TensorData::View(std::move(bytes), data, size);
}

// `source` with `data` as its blocks of `type`.
ir::Tensor BlockTensor(const ir::Tensor& source, TensorType type, ir::TensorData data,
                       std::string algorithm) {
  ir::Tensor t;
  t.name = source.name;
  t.dims = source.dims;
  t.provenance = source.provenance;
  t.role = source.role;
  t.layer = source.layer;
  t.dtype = ir::DType::kU8;
  t.data = std::move(data);
  t.quant.kind = ir::QuantKind::kGgmlBlocks;
  t.quant.block_type = static_cast<ir::GgmlType>(type);
  t.quant.axis = static_cast<int>(t.dims.size()) - 1;
  t.quant.group_size = gguf::BlockSize(type);
  t.quant.algorithm = std::move(algorithm);
  return t;
}

}  // namespace

absl::StatusOr<GgmlBlocksModel> EncodeDecoderAsGgmlBlocks(const ir::Model& model,
                                                          const GgufExportOptions& options,
                                                          bool deferred) {
  ASSIGN_OR_RETURN(ExportPlan plan, PlanExport(model, options));
  const GgufImportance* importance = options.importance ? &*options.importance : nullptr;
  if (importance) RETURN_IF_ERROR(CheckImportance(plan, *importance, model));
  TypeChooser chooser = ChooserFor(plan, importance != nullptr);
  const int threads = std::max(1, options.threads);

  GgmlBlocksModel out;
  GgufExportResult& stats = out.stats;
  std::map<std::string, ir::Tensor> replaced;
  std::set<std::string> dropped;  // companions of weights written as blocks
  double matrix_bits = 0, matrix_weights = 0;
  std::vector<float> values;  // reused: its pages are touched once
  auto jobs = std::make_shared<std::map<std::string, BlockJob>>();
  for (const Planned& planned : plan.planned) {
    TypeChoice choice = chooser.Choose(planned.slot);  // every tensor, in order
    Planned p = planned;
    p.rope_heads = 0;  // the artifact keeps HF's row order
    const ir::Tensor& src = *p.source;
    const int64_t cols = p.slot.row_length;
    ASSIGN_OR_RETURN(const uint64_t numel, src.NumElements());
    const int64_t rows = cols > 0 ? static_cast<int64_t>(numel) / cols : 0;
    // Codes are carried in their own type; with --allow-requantize only when
    // that is the type asked for, otherwise decoded and encoded again.
    const bool carried =
        p.carried && (!options.allow_requantize || choice.type == *p.carried);
    if (carried) choice = TypeChoice{*p.carried, ""};
    if (!choice.fallback_note.empty()) ++stats.fallbacks;
    const bool is_block = gguf::BlockSize(choice.type) > 1;
    if (p.slot.rank >= 2) {
      const int64_t row_bytes = gguf::RowBytes(choice.type, cols);
      matrix_bits += 8.0 * static_cast<double>(row_bytes) * static_cast<double>(rows);
      matrix_weights += static_cast<double>(numel);
    }
    std::string note = choice.fallback_note;
    if (src.quant.quantized()) {
      dropped.insert(src.quant.scale);
      dropped.insert(src.quant.zero_point);
      dropped.insert(src.name + hf::kInputPermSuffix);
    }
    ++stats.tensors;
    if (carried) {
      ++stats.carried;
      if (src.quant.kind == ir::QuantKind::kGgmlBlocks) continue;  // already blocks
      std::vector<uint8_t> bytes(static_cast<size_t>(gguf::RowBytes(choice.type, cols) * rows));
      RETURN_IF_ERROR(EncodeCarriedRows(choice.type, src, p.scale, p.zero_point,
                                        [](int64_t r) { return r; }, bytes.data(), bytes.size()));
      replaced[src.name] = BlockTensor(src, choice.type, ir::TensorData::Owned(std::move(bytes)),
                                       src.quant.algorithm);
      note = "the codes as they are";
    } else if (auto enc = options.encoded.find(src.name); enc != options.encoded.end()) {
      if (enc->second.type != choice.type ||
          static_cast<int64_t>(enc->second.rows.size()) != rows * gguf::RowBytes(choice.type, cols)) {
        return absl::InternalError(absl::StrCat(
            src.name, ": pre-encoded as ", std::string(gguf::TypeName(enc->second.type)),
            "; the preset gives ", std::string(gguf::TypeName(choice.type))));
      }
      replaced[src.name] = BlockTensor(src, choice.type, ir::TensorData::Owned(enc->second.rows),
                                       options.encoded_by);
      ++stats.pre_encoded;
      note = options.encoded_by;
    } else if (!is_block) {
      if (src.quant.quantized()) ++stats.requantized;
      RETURN_IF_ERROR(ReadValuesF32(p, numel, threads, values));
      const ir::DType dtype = gguf::FloatDType(choice.type);
      ir::Tensor t = src;
      t.quant = {};
      t.dtype = dtype;
      std::vector<uint8_t> bytes(*ir::DTypeByteSize(dtype, numel));
      RETURN_IF_ERROR(ir::ConvertFloats(ir::DType::kF32,
                                        reinterpret_cast<const uint8_t*>(values.data()), dtype,
                                        bytes.data(), numel));
      t.data = ir::TensorData::Owned(std::move(bytes));
      replaced[src.name] = std::move(t);
    } else {
      if (src.quant.quantized()) ++stats.requantized;
      BlockJob job{p, choice.type, nullptr, rows, cols, numel};
      if (importance && choice.type != TensorType::kQ8_0) {
        auto it = importance->columns.find(p.gguf_name);
        if (it != importance->columns.end()) {
          job.columns = it->second.data();
          ++stats.with_importance;
        }
      }
      const std::string algorithm = job.columns ? "imatrix" : "rtn";
      if (deferred) {
        const uint64_t size = static_cast<uint64_t>(gguf::RowBytes(choice.type, cols) * rows);
        replaced[src.name] =
            BlockTensor(src, choice.type, ir::TensorData::Deferred(size), algorithm);
        (*jobs)[src.name] = std::move(job);
      } else {
        ASSIGN_OR_RETURN(ir::TensorData bytes, EncodeJob(job, threads, nullptr));
        replaced[src.name] = BlockTensor(src, choice.type, std::move(bytes), algorithm);
      }
    }
    if (options.log) {
      options.log(absl::StrCat(src.name, " ", std::string(gguf::TypeName(choice.type)),
                               note.empty() ? "" : " (" + note + ")"));
    }
  }
  if (stats.pre_encoded != static_cast<int64_t>(options.encoded.size())) {
    return absl::InternalError(absl::StrCat(options.encoded.size(), " matrices pre-encoded, ",
                                            stats.pre_encoded, " of them tensors of the model"));
  }
  stats.matrix_bits_per_weight = matrix_weights > 0 ? matrix_bits / matrix_weights : 0;

  out.model = model;
  ir::Graph graph;
  graph.name = model.graph.name;
  graph.inputs = model.graph.inputs;
  graph.outputs = model.graph.outputs;
  graph.value_info = model.graph.value_info;
  graph.nodes = model.graph.nodes;
  for (const ir::Tensor& t : model.graph.initializers()) {
    if (dropped.count(t.name) && !replaced.count(t.name)) continue;
    auto r = replaced.find(t.name);
    RETURN_IF_ERROR(graph.AddInitializer(r != replaced.end() ? r->second : t));
  }
  out.model.graph = std::move(graph);
  if (deferred) {
    // Input pages are given back once a weight is read, so resident memory
    // stays near one tensor's worth instead of the model's.
    auto pages = std::make_shared<const support::InputPages>(
        support::InputPages::Snapshot(model.input_files));
    out.produce = [jobs, pages, threads](const ir::Tensor& t) -> absl::StatusOr<ir::TensorData> {
      ASSIGN_OR_RETURN(const BlockJob* job, FindJob(*jobs, t));
      return EncodeJob(*job, threads, pages.get());
    };
    out.produce_streamed = [jobs, pages, threads](const ir::Tensor& t,
                                                  const ByteSink& sink) -> absl::Status {
      ASSIGN_OR_RETURN(const BlockJob* job, FindJob(*jobs, t));
      return Annotate(EncodeTensorStreamed(job->p, job->type, job->rows, job->cols, job->columns,
                                           threads, pages.get(), JobBytes(*job), sink),
                      "tensor '" + job->p.source->name + "'");
    };
  }
  return out;
}

}  // namespace slimpack::gguf_export
