#include "export/gguf_llama.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "export/gguf_carried_codes.h"
#include "export/gguf_encode.h"
#include "export/gguf_llama_metadata.h"
#include "export/gguf_llama_plan.h"
#include "export/gguf_types.h"
#include "formats/gguf/ggml_blocks.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/gguf/llama_names.h"
#include "hf/input_perm.h"
#include "ir/float_convert.h"
#include "ir/quant.h"
#include "support/input_pages.h"
#include "support/status_macros.h"
#include "support/threads.h"

namespace slimpack::gguf_export {

absl::StatusOr<std::vector<MatrixTarget>> PlanMatrixTypes(const ir::Model& model,
                                                          const GgufExportOptions& options,
                                                          bool with_importance) {
  ASSIGN_OR_RETURN(ExportPlan plan, PlanExport(model, options));
  TypeChooser chooser = ChooserFor(plan, with_importance);
  std::vector<MatrixTarget> out;
  for (const Planned& p : plan.planned) {
    const TypeChoice choice = chooser.Choose(p.slot);  // every tensor: the rules count them
    if (p.slot.rank < 2 || p.carried || p.source->quant.quantized()) continue;
    out.push_back(MatrixTarget{p.source->name, p.gguf_name, choice.type});
  }
  return out;
}

absl::StatusOr<GgufExportResult> ExportDecoderToGguf(const ir::Model& model,
                                                     const GgufExportOptions& options,
                                                     const std::string& path) {
  ASSIGN_OR_RETURN(ExportPlan plan, PlanExport(model, options));
  const ir::ArchitectureInfo& a = *plan.a;
  const std::vector<hf::LayerSizes>& sizes = plan.sizes;
  const std::string& arch = plan.arch;
  const Preset& preset = plan.preset;
  const std::vector<Planned>& planned = plan.planned;
  gguf::GgufWriter writer;
  RETURN_IF_ERROR(
      AddNameAndTokenizer(model, a, sizes, arch, preset, options.allow_requantize, writer));
  // The writer fills one tensor at a time; each source's pages of a mapped
  // input file are given back once it is encoded, so resident memory stays
  // near one tensor's worth instead of the whole input's (a second read of
  // the same pages faults them in again from the page cache).
  const auto pages = std::make_shared<const support::InputPages>(
      support::InputPages::Snapshot(model.input_files));

  const GgufImportance* importance = options.importance ? &*options.importance : nullptr;
  if (importance) {
    RETURN_IF_ERROR(CheckImportance(plan, *importance, model));
    writer.AddString("quantize.imatrix.file", importance->file);
    writer.AddString("quantize.imatrix.dataset", importance->dataset);
    writer.AddI64("quantize.imatrix.entries_count",
                  static_cast<int64_t>(importance->columns.size()));
    writer.AddI64("quantize.imatrix.chunks_count", importance->chunks);
  }
  TypeChooser chooser = ChooserFor(plan, importance != nullptr);
  GgufExportResult result;
  double matrix_bits = 0, matrix_weights = 0;
  // Re-encoded quantized weights: the error the second quantization added,
  // filled while the writer encodes them.
  std::vector<std::pair<std::string, double>> requantized;
  std::mutex requantized_mu;
  std::vector<std::string> requantized_names;  // in file order
  for (const Planned& p : planned) {
    // Asked even for carried codes: llama-quantize's rules count tensors
    // of a kind (attn_v, ffn_down) as they go.
    TypeChoice choice = chooser.Choose(p.slot);
    // Codes are carried in their own type; with --allow-requantize only when
    // that is the type asked for, otherwise decoded and encoded again.
    const bool carried =
        p.carried && (!options.allow_requantize || choice.type == *p.carried);
    if (carried) {
      choice = TypeChoice{};
      choice.type = *p.carried;
      ++result.carried;
    } else if (p.source->quant.quantized()) {
      ++result.requantized;
    }
    const int64_t cols = p.slot.row_length;
    const int64_t rows = p.slot.rank >= 2 ? p.source->dims[0] : 1;
    std::vector<int64_t> ne = {cols};
    if (p.slot.rank >= 2) ne.push_back(rows);
    ASSIGN_OR_RETURN(const uint64_t bytes,
                     gguf::GgufWriter::TensorBytes(p.gguf_name, ne, choice.type));
    if (p.slot.rank >= 2) {
      matrix_bits += 8.0 * static_cast<double>(bytes);
      matrix_weights += static_cast<double>(rows) * static_cast<double>(cols);
    }
    if (!choice.fallback_note.empty()) ++result.fallbacks;
    if (options.log) {
      std::string note = choice.fallback_note;
      if (options.encoded.count(p.source->name)) {
        note = options.encoded_by + (note.empty() ? "" : "; " + note);
      } else if (p.source->quant.quantized()) {
        note = carried ? absl::StrCat("the artifact's ", p.source->quant.algorithm, " codes as they are")
               : p.carried
                   ? absl::StrCat("--allow-requantize: its ", std::string(gguf::TypeName(*p.carried)),
                                  " codes decoded and encoded again", note.empty() ? "" : "; " + note)
               : p.input_perm
                   ? absl::StrCat("act-order codes: columns put back in checkpoint order, "
                                  "dequantized and quantized again", note.empty() ? "" : "; " + note)
                   : absl::StrCat("no ggml type holds the artifact's layout: dequantized and "
                                  "quantized again", note.empty() ? "" : "; " + note);
      }
      options.log(absl::StrCat(p.gguf_name, " [", absl::StrJoin(ne, ", "), "] ",
                               std::string(gguf::TypeName(choice.type)),
                               note.empty() ? "" : " (" + note + ")"));
    }
    const int threads = std::max(1, options.threads);
    const float* columns = nullptr;
    // Float types store weights exactly and ggml's q8_0 has no weighted
    // search: the imatrix reaches the other quantized types.
    if (importance && !carried && gguf::BlockSize(choice.type) > 1 &&
        choice.type != TensorType::kQ8_0) {
      auto it = importance->columns.find(p.gguf_name);
      if (it != importance->columns.end()) {
        columns = it->second.data();
        ++result.with_importance;
      } else if (p.slot.rank >= 2 && options.log) {
        options.log(absl::StrCat(p.gguf_name, ": no imatrix entry, quantized without one"));
      }
    }
    if (carried) {
      RETURN_IF_ERROR(writer.AddTensor(
          p.gguf_name, ne, choice.type,
          [p, rows, type = choice.type, pages](uint8_t* dst, uint64_t size) -> absl::Status {
            RETURN_IF_ERROR(EncodeCarriedRows(
                type, *p.source, p.scale, p.zero_point,
                [&p, rows](int64_t r) {
                  return p.rope_heads > 0 ? gguf::RopePermutedSourceRow(r, rows, p.rope_heads) : r;
                },
                dst, size));
            pages->Release(p.source->data.data(), p.source->data.size());
            return absl::OkStatus();
          }));
      ++result.tensors;
      continue;
    }
    if (auto enc = options.encoded.find(p.source->name); enc != options.encoded.end()) {
      const int64_t row_bytes = gguf::RowBytes(choice.type, cols);
      if (enc->second.type != choice.type ||
          static_cast<int64_t>(enc->second.rows.size()) != rows * row_bytes) {
        return absl::InternalError(absl::StrCat(
            p.gguf_name, ": pre-encoded as ", std::string(gguf::TypeName(enc->second.type)),
            " in ", enc->second.rows.size(), " bytes; the preset gives ",
            std::string(gguf::TypeName(choice.type)), " in ", rows * row_bytes));
      }
      RETURN_IF_ERROR(writer.AddTensor(
          p.gguf_name, ne, choice.type,
          [p, rows, row_bytes, src = enc->second.rows.data()](uint8_t* dst,
                                                               uint64_t) -> absl::Status {
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t from =
                  p.rope_heads > 0 ? gguf::RopePermutedSourceRow(r, rows, p.rope_heads) : r;
              std::memcpy(dst + r * row_bytes, src + from * row_bytes,
                          static_cast<size_t>(row_bytes));
            }
            return absl::OkStatus();
          }));
      ++result.tensors;
      ++result.pre_encoded;
      continue;
    }
    const bool requantize = p.source->quant.quantized();
    if (requantize) requantized_names.push_back(p.gguf_name);
    if (!requantize) {
      // Encoded chunk by chunk straight into the file (no tensor buffer),
      // `size` the writer's own count, which the encoder checks first.
      RETURN_IF_ERROR(writer.AddTensorStreamed(
          p.gguf_name, ne, choice.type,
          [p, rows, cols, type = choice.type, columns, threads,
           pages](uint64_t size, const gguf::TensorSink& sink) -> absl::Status {
            return EncodeTensorStreamed(p, type, rows, cols, columns, threads, pages.get(), size,
                                        sink);
          }));
      ++result.tensors;
      continue;
    }
    RETURN_IF_ERROR(writer.AddTensor(
        p.gguf_name, ne, choice.type,
        // Re-encoded: decoded whole, and its added error measured.
        [p, rows, cols, type = choice.type, columns, threads, &requantized, &requantized_mu,
         pages](uint8_t* dst, uint64_t size) -> absl::Status {
          std::vector<float> values;
          RETURN_IF_ERROR(ReadValuesF32(p, static_cast<uint64_t>(rows) * cols, threads, values));
          pages->Release(p.source->data.data(), p.source->data.size());
          RETURN_IF_ERROR(EncodeRows(type, values, rows, cols, columns, threads, dst, size));
          // Relative L2 of what ggml decodes against the artifact's values.
          std::vector<float> back(values.size());
          RETURN_IF_ERROR(gguf::DequantizeRow(type, dst, static_cast<int64_t>(values.size()),
                                              back.data()));
          double num = 0, den = 0;
          for (size_t i = 0; i < values.size(); ++i) {
            const double d = static_cast<double>(back[i]) - values[i];
            num += d * d;
            den += static_cast<double>(values[i]) * values[i];
          }
          // Non-finite (a value past f16's range became inf, or the
          // source held inf): recorded as +inf, never NaN.
          const double rel = den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
          std::lock_guard<std::mutex> lock(requantized_mu);
          requantized.emplace_back(p.gguf_name, std::isfinite(rel) ? rel : INFINITY);
          return absl::OkStatus();
        }));
    ++result.tensors;
  }
  if (result.pre_encoded != static_cast<int64_t>(options.encoded.size())) {
    return absl::InternalError(absl::StrCat(options.encoded.size(), " matrices pre-encoded, ",
                                            result.pre_encoded, " of them tensors of the file"));
  }
  // The error each re-encoded tensor gained, recorded in the file itself
  // (`slimpack inspect FILE.gguf` prints it): names now, values once the
  // tensors are encoded (written over the header's reserved floats).
  if (!requantized_names.empty()) {
    writer.AddStringArray(std::string(gguf::kRequantizedTensorsKey), requantized_names);
    writer.AddDeferredF32Array(
        std::string(gguf::kRequantizedRelL2Key), requantized_names.size(),
        [&requantized, &requantized_names] {
          std::map<std::string, double> by_name(requantized.begin(), requantized.end());
          std::vector<float> out;
          for (const std::string& n : requantized_names) {
            auto it = by_name.find(n);
            // Every requantized tensor was encoded when Write calls this.
            out.push_back(it == by_name.end() ? std::nanf("") : static_cast<float>(it->second));
          }
          return out;
        });
  }
  ASSIGN_OR_RETURN(const gguf::WrittenFile written, writer.Write(path));
  for (const auto& [name, rel] : requantized) {
    result.max_requantized_rel_l2 = std::max(result.max_requantized_rel_l2, rel);
    if (options.log) {
      options.log(absl::StrCat(name, ": quantized again, relative L2 ", rel,
                               " against the artifact's dequantized values"));
    }
  }
  result.file_bytes = written.file_bytes;
  result.matrix_bits_per_weight = matrix_weights > 0 ? matrix_bits / matrix_weights : 0;
  return result;
}

}  // namespace slimpack::gguf_export
