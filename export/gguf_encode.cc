#include "export/gguf_encode.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "formats/gguf/ggml_blocks.h"
#include "formats/gguf/llama_names.h"
#include "hf/input_perm.h"
#include "ir/float_convert.h"
#include "ir/quant.h"
#include "support/in_order_sink.h"
#include "support/status_macros.h"
#include "support/threads.h"

namespace slimpack::gguf_export {
namespace {

// Rows handed to one QuantizeRows call: about 2^16 weights, enough for the
// K searches to fill their lanes on rows of any length (64 groups of 32 at
// a time on AVX-512), little enough to stay in the core's L2.
int64_t RowsPerCall(int64_t cols, int64_t left) {
  return std::clamp<int64_t>((int64_t{1} << 16) / std::max<int64_t>(cols, 1), 1, left);
}

}  // namespace

absl::Status ReadValuesF32(const Planned& p, uint64_t numel, int threads,
                           std::vector<float>& out) {
  const ir::Tensor& t = *p.source;
  // Without a row permutation the values go straight into `out`, whose
  // capacity a caller may reuse across tensors (fresh pages cost more
  // than the conversion).
  std::vector<float> scratch;
  std::vector<float>& plain = p.rope_heads == 0 ? out : scratch;
  if (t.quant.quantized()) {
    ASSIGN_OR_RETURN(plain, ir::DequantizeToF32(t, p.scale, p.zero_point));
    if (p.input_perm) {
      hf::UnpermuteColumns(*p.input_perm, static_cast<int64_t>(numel / p.input_perm->size()),
                           plain.data());
    }
  } else {
    // Widened in chunks on threads (each element converts alone, so the
    // values do not depend on the split); a lone thread made this the
    // slowest step of a q4_0 conversion.
    plain.resize(numel);
    const uint64_t esize = static_cast<uint64_t>(ir::DTypeBits(t.dtype)) / 8;
    if (esize == 0 || t.data.size() != numel * esize) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name, "': ", t.data.size(),
                                                     " bytes for ", numel, " elements of ",
                                                     std::string(ir::DTypeName(t.dtype))));
    }
    const int64_t parts = std::max<int64_t>(
        1, std::min<int64_t>(threads, static_cast<int64_t>(numel >> 16)));
    std::mutex mu;
    absl::Status first_error;
    support::RunOnThreads(parts, [&](int64_t part) {
      const uint64_t begin = numel * part / parts, end = numel * (part + 1) / parts;
      absl::Status s = ir::ConvertFloats(t.dtype, t.data.data() + begin * esize, ir::DType::kF32,
                                         reinterpret_cast<uint8_t*>(plain.data() + begin),
                                         end - begin);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = s;
      }
    });
    RETURN_IF_ERROR(first_error);
  }
  if (p.rope_heads == 0) return absl::OkStatus();
  const int64_t rows = RopeRows(t), cols = RopeCols(t);
  out.resize(numel);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = gguf::RopePermutedSourceRow(r, rows, p.rope_heads);
    std::copy_n(plain.data() + src * cols, cols, out.data() + r * cols);
  }
  return absl::OkStatus();
}

absl::Status EncodeRows(TensorType type, const std::vector<float>& values, int64_t rows,
                        int64_t cols, const float* importance, int threads, uint8_t* dst,
                        uint64_t size) {
  const int64_t row_bytes = gguf::RowBytes(type, cols);
  if (static_cast<uint64_t>(row_bytes * rows) != size) {
    return absl::InternalError(absl::StrCat("encoded size ", row_bytes * rows, " != ", size));
  }
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, rows));
  std::mutex mu;
  absl::Status first_error;
  support::RunOnThreads(parts, [&](int64_t part) {
    const int64_t begin = rows * part / parts, end = rows * (part + 1) / parts;
    for (int64_t r = begin; r < end;) {
      const int64_t n = RowsPerCall(cols, end - r);
      absl::Status s = gguf::QuantizeRows(type, values.data() + r * cols, n, cols, importance,
                                          dst + r * row_bytes, r);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = s;
        return;
      }
      r += n;
    }
  });
  return first_error;
}

namespace {

// EncodeTensor into `dst` or, when `sink` is set, through it in order.
absl::Status Encode(const Planned& p, TensorType type, int64_t rows, int64_t cols,
                    const float* importance, int threads, const support::InputPages* pages,
                    uint8_t* dst, uint64_t size, const ByteSink* sink) {
  const ir::Tensor& t = *p.source;
  const int64_t row_bytes = gguf::RowBytes(type, cols);
  if (static_cast<uint64_t>(row_bytes * rows) != size) {
    return absl::InternalError(absl::StrCat("encoded size ", row_bytes * rows, " != ", size));
  }
  const uint64_t esize = static_cast<uint64_t>(ir::DTypeBits(t.dtype)) / 8;
  const uint64_t numel = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols);
  // A rotary bias is permuted as [rows, 1] but encoded as one row: only
  // tensors whose permuted rows are the encoded rows stream.
  const bool streams = !t.quant.quantized() && esize > 0 && t.data.size() == numel * esize &&
                       (p.rope_heads == 0 || (RopeRows(t) == rows && RopeCols(t) == cols));
  if (!streams) {
    std::vector<float> values;
    RETURN_IF_ERROR(ReadValuesF32(p, numel, threads, values));
    if (pages) pages->Release(t.data.data(), t.data.size());
    if (!sink) return EncodeRows(type, values, rows, cols, importance, threads, dst, size);
    std::vector<uint8_t> bytes(size);
    RETURN_IF_ERROR(EncodeRows(type, values, rows, cols, importance, threads, bytes.data(), size));
    return (*sink)(bytes.data(), size);
  }
  // Chunks of at most ~2^20 weights (the pages given back at a time), and
  // at least four per thread so a small matrix (a GQA model's k/v) still
  // spreads over every thread: the GGUF writer fills tensors one by one,
  // so this is its only parallelism.
  const int64_t by_size = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(cols, 1));
  const int64_t by_threads = std::max<int64_t>(1, (rows + 4 * threads - 1) / (4 * int64_t{threads}));
  const int64_t chunk_rows = std::min(by_size, by_threads);
  const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, chunks));
  std::atomic<int64_t> next{0};
  std::mutex mu;
  absl::Status first_error;
  // The backlog keeps at most two chunks per thread in memory.
  std::optional<support::InOrderSink> in_order;
  if (sink) in_order.emplace(*sink, 2 * parts);
  auto fail = [&](const absl::Status& s) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.ok()) first_error = s;
      next = chunks;
    }
    if (in_order) in_order->Stop();
  };
  support::RunOnThreads(parts, [&](int64_t) {
    std::vector<float> block;
    std::vector<uint8_t> raw;  // the block's input bytes, read through the file
    for (int64_t c = next++; c < chunks; c = next++) {
      if (sink && !in_order->WaitForRoom(c)) return;
      const int64_t begin = c * chunk_rows, end = std::min(rows, begin + chunk_rows);
      std::vector<uint8_t> piece;
      if (sink) piece.resize(static_cast<size_t>((end - begin) * row_bytes));
      uint8_t* out = sink ? piece.data() : dst + begin * row_bytes;
      if (p.rope_heads == 0 && !pages) {
        support::PrefaultRead(t.data.data() + static_cast<uint64_t>(begin * cols) * esize,
                              static_cast<uint64_t>((end - begin) * cols) * esize);
      }
      const uint64_t in_row = static_cast<uint64_t>(cols) * esize;
      auto source_row = [&](int64_t row) {
        const int64_t from =
            p.rope_heads > 0 ? gguf::RopePermutedSourceRow(row, rows, p.rope_heads) : row;
        return t.data.data() + static_cast<uint64_t>(from) * in_row;
      };
      for (int64_t r = begin; r < end;) {
        const int64_t n = RowsPerCall(cols, end - r);
        block.resize(static_cast<size_t>(n * cols));
        // Input rows are copied through the file first where they are a
        // mapped file's (InputPages::Copy says why): consecutive rows in
        // one read, permuted rows one by one. Then widened.
        if (pages) {
          raw.resize(static_cast<size_t>(n) * in_row);
          const int64_t step = p.rope_heads > 0 ? 1 : n;
          for (int64_t k = 0; k < n; k += step) {
            pages->Copy(source_row(r + k), static_cast<uint64_t>(step) * in_row,
                        raw.data() + static_cast<uint64_t>(k) * in_row);
          }
        }
        for (int64_t k = 0; k < n; ++k) {
          const uint8_t* src =
              pages ? raw.data() + static_cast<uint64_t>(k) * in_row : source_row(r + k);
          absl::Status s =
              ir::ConvertFloats(t.dtype, src, ir::DType::kF32,
                                reinterpret_cast<uint8_t*>(block.data() + k * cols),
                                static_cast<uint64_t>(cols));
          if (!s.ok()) return fail(Annotate(s, absl::StrCat("row ", r + k)));
        }
        absl::Status s = gguf::QuantizeRows(type, block.data(), n, cols, importance,
                                            out + (r - begin) * row_bytes, r);
        if (!s.ok()) return fail(s);
        r += n;
      }
      // Rotary rows come from anywhere in their head: those pages go back
      // with the rest below.
      if (pages && p.rope_heads == 0) {
        pages->Release(t.data.data() + static_cast<uint64_t>(begin * cols) * esize,
                       static_cast<uint64_t>((end - begin) * cols) * esize);
      }
      if (sink) {
        if (absl::Status s = in_order->Deposit(c, std::move(piece)); !s.ok()) return fail(s);
      }
    }
  });
  if (pages) pages->Release(t.data.data(), t.data.size());
  if (first_error.ok() && sink && in_order->emitted() != chunks) {
    return absl::InternalError(absl::StrCat(in_order->emitted(), " of ", chunks,
                                            " chunks of rows handed over"));
  }
  return first_error;
}

}  // namespace

absl::Status EncodeTensor(const Planned& p, TensorType type, int64_t rows, int64_t cols,
                          const float* importance, int threads, const support::InputPages* pages,
                          uint8_t* dst, uint64_t size) {
  return Encode(p, type, rows, cols, importance, threads, pages, dst, size, nullptr);
}

absl::Status EncodeTensorStreamed(const Planned& p, TensorType type, int64_t rows, int64_t cols,
                                  const float* importance, int threads,
                                  const support::InputPages* pages, uint64_t size,
                                  const ByteSink& sink) {
  return Encode(p, type, rows, cols, importance, threads, pages, nullptr, size, &sink);
}

TypeChooser ChooserFor(const ExportPlan& plan, bool with_importance) {
  return TypeChooser(plan.preset, static_cast<int>(plan.a->num_layers), plan.sizes[0].num_heads,
                     plan.sizes[0].num_kv_heads, with_importance, plan.type_overrides);
}

absl::Status CheckImportance(const ExportPlan& plan, const GgufImportance& importance,
                             const ir::Model& model) {
  for (const auto& entry : importance.columns) {
    // (A lambda may not capture a structured binding before C++20.)
    const std::string& name = entry.first;
    const std::vector<float>& columns = entry.second;
    auto it = std::find_if(plan.planned.begin(), plan.planned.end(),
                           [&name](const Planned& p) { return p.gguf_name == name; });
    if (it == plan.planned.end() || it->slot.rank < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          importance.file, ": imatrix entry '", name, "' names no matrix of ",
          model.source_path, " (an imatrix made for another model?)"));
    }
    if (static_cast<int64_t>(columns.size()) != it->slot.row_length) {
      return absl::InvalidArgumentError(absl::StrCat(
          importance.file, ": imatrix entry '", name, "' has ", columns.size(),
          " values; the matrix has rows of ", it->slot.row_length));
    }
  }
  return absl::OkStatus();
}

}  // namespace slimpack::gguf_export
