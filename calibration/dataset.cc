// Dataset reading: files are opened one at a time; a file holding a batch is
// served as row slices that borrow its bytes, so at most one file is live.
#include "absl/strings/match.h"
#include "calibration/dataset.h"

#include "ir/float_convert.h"


#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "calibration/data_files_internal.h"
#include "calibration/finite_inputs.h"
#include "calibration/token_ids.h"
#include "formats/numpy/numpy_io.h"
#include "formats/safetensors/safetensors_reader.h"
#include "formats/shard/writer/file_digest.h"
#include "support/status_macros.h"

namespace slimpack::calibration {
namespace {

using internal::BaseName;
using internal::FileKind;
using internal::KindOf;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

bool IsIntegerType(ir::DType t) {
  return t == ir::DType::kI64 || t == ir::DType::kI32;
}

// A token file feeds one integer ids input plus optional attention_mask /
// position_ids; anything else cannot be derived from token ids.
absl::Status CheckTokenInputs(const std::string& path,
                              const std::vector<ir::ValueInfo>& inputs) {
  int ids_inputs = 0;
  for (const auto& in : inputs) {
    const bool derived = in.name == "attention_mask" || in.name == "position_ids";
    if (!IsIntegerType(in.dtype) || (!derived && ++ids_inputs > 1)) {
      return absl::InvalidArgumentError(
          path + ": a token-id file cannot provide input '" + in.name + "' (" +
          std::string(ir::DTypeName(in.dtype)) +
          "); it feeds one ids input (i64/i32) plus attention_mask and position_ids");
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<ir::ValueInfo> FeedInputs(const ir::Graph& graph) {
  std::vector<ir::ValueInfo> out;
  for (const auto& in : graph.inputs) {
    if (graph.FindInitializer(in.name) == nullptr) out.push_back(in);
  }
  return out;
}

struct Dataset::Impl {
  std::vector<ir::ValueInfo> inputs;
  DatasetOptions options;
  std::vector<std::string> paths;
  std::vector<DataFileDigest> digests;
  bool random = false;
  int64_t random_samples = 0;
  uint64_t seed = 0;

  // Cursor.
  size_t file_index = 0;
  int64_t random_index = 0;
  // The open array file: arrays in input order, rows and next row.
  std::shared_ptr<std::vector<ir::Tensor>> arrays;
  std::vector<int64_t> batch_added;  // 1 when the array was rank - 1
  int64_t rows = 0, next_row = 0, chunk = 0;
  // The open token file.
  std::unique_ptr<std::ifstream> tokens;
  int64_t token_line = 0;

  absl::Status LoadArrays(const std::string& path, FileKind kind);
  absl::StatusOr<Sample> SliceRows();
  absl::StatusOr<std::optional<Sample>> NextTokens();
  absl::StatusOr<Sample> RandomSample();
};

absl::Status Dataset::Impl::LoadArrays(const std::string& path, FileKind kind) {
  std::vector<ir::Tensor> all;
  if (kind == FileKind::kSafetensors) {
    ASSIGN_OR_RETURN(auto file, safetensors::ReadSafetensorsFile(path));
    all = std::move(file.tensors);
  } else {
    ASSIGN_OR_RETURN(all, numpy::ReadNpyOrNpz(path));
  }
  if (kind == FileKind::kNpy) {
    if (inputs.size() != 1 || all.size() != 1) {
      return absl::InvalidArgumentError(
          path + ": a .npy file feeds a single-input model, but the model has " +
          std::to_string(inputs.size()) + " inputs; use .npz or .safetensors");
    }
    all[0].name = inputs[0].name;
  }
  auto ordered = std::make_shared<std::vector<ir::Tensor>>();
  batch_added.clear();
  rows = -1;
  chunk = options.max_batch;
  std::string rows_from;
  for (const ir::ValueInfo& in : inputs) {
    auto rn = options.rename.find(in.name);
    const std::string key = rn == options.rename.end() ? in.name : rn->second;
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const ir::Tensor& t) { return t.name == key; });
    if (it == all.end()) {
      std::string have;
      for (const auto& t : all) have += (have.empty() ? "" : ", ") + t.name;
      return absl::InvalidArgumentError(
          path + ": missing array '" + key + "' for model input '" + in.name +
          "' (file has: " + have + ")");
    }
    const std::string what = path + ": input '" + in.name + "'" +
                             (key == in.name ? "" : " (array '" + key + "')");
    // i32 -> i64 is the one conversion allowed: it is exact (see dataset.h).
    const bool widen = it->dtype == ir::DType::kI32 && in.dtype == ir::DType::kI64;
    if (it->dtype != in.dtype && !widen) {
      return absl::InvalidArgumentError(
          what + ": dtype " + std::string(ir::DTypeName(it->dtype)) +
          ", expected " + std::string(ir::DTypeName(in.dtype)));
    }
    if (it->dtype == ir::DType::kI4 || it->dtype == ir::DType::kU4) {
      return absl::UnimplementedError(what + ": packed 4-bit inputs are not supported");
    }
    std::vector<int64_t> dims = it->dims;
    int64_t added = 0;
    const std::string found = ir::Shape::FromDims(it->dims).ToString();
    if (in.shape.rank_known()) {
      const size_t r = in.shape.rank();
      if (dims.size() + 1 == r) {
        dims.insert(dims.begin(), 1);
        added = 1;
      } else if (dims.size() != r || r == 0) {
        return absl::InvalidArgumentError(
            what + ": shape " + found + " has rank " +
            std::to_string(it->dims.size()) + ", expected " + in.shape.ToString() +
            " (rank " + std::to_string(r) + ", or rank " + std::to_string(r - 1) +
            " for one sample)");
      }
      for (size_t d = 1; d < r; ++d) {
        const ir::Dim& md = in.shape.dim(d);
        if (md.is_static() && md.value != dims[d]) {
          return absl::InvalidArgumentError(
              what + ": shape " + found + " does not match " +
              in.shape.ToString() + " at dim " + std::to_string(d) + " (expected " +
              std::to_string(md.value) + ", found " + std::to_string(dims[d]) + ")");
        }
      }
      if (r > 0 && in.shape.dim(0).is_static()) chunk = std::max<int64_t>(1, in.shape.dim(0).value);
    }
    const int64_t in_rows = dims.empty() ? 1 : dims[0];
    if (rows >= 0 && in_rows != rows) {
      return absl::InvalidArgumentError(
          path + ": input '" + in.name + "' has " + std::to_string(in_rows) +
          " rows but input '" + rows_from + "' has " + std::to_string(rows));
    }
    rows = in_rows;
    rows_from = in.name;
    ir::Tensor t = *it;
    if (widen) {
      ASSIGN_OR_RETURN(t, WidenToI64(*it, what));
    }
    // Checked over the whole array with the file's own dims, so the
    // position is the one the user sees in NumPy.
    if (IsTokenIdsInput(in)) {
      RETURN_IF_ERROR(CheckTokenTensor(t, options.vocab_size, what));
      RETURN_IF_ERROR(CheckTokenSequenceLength(t, options.max_positions, what));
    }
    RETURN_IF_ERROR(CheckFiniteTensor(t, what));
    t.name = in.name;
    t.dims = dims;
    ordered->push_back(std::move(t));
    batch_added.push_back(added);
  }
  if (rows <= 0) {
    return absl::InvalidArgumentError(path + ": arrays have 0 rows");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Shape& s = inputs[i].shape;
    if (s.rank_known() && s.rank() > 0 && s.dim(0).is_static() && rows % chunk != 0) {
      return absl::InvalidArgumentError(
          path + ": input '" + inputs[i].name + "' has " + std::to_string(rows) +
          " rows, not a multiple of its static batch " + std::to_string(chunk));
    }
  }
  arrays = std::move(ordered);
  next_row = 0;
  return absl::OkStatus();
}

absl::StatusOr<Sample> Dataset::Impl::SliceRows() {
  const int64_t begin = next_row;
  const int64_t end = std::min(rows, begin + chunk);
  Sample s;
  s.source = BaseName(paths[file_index]);
  if (begin != 0 || end != rows) {
    s.source += "[" + std::to_string(begin) + ":" + std::to_string(end) + "]";
  }
  s.rows = end - begin;
  for (const ir::Tensor& t : *arrays) {
    ir::Tensor slice = t;
    if (!slice.dims.empty()) {
      const uint64_t row_elems = *ir::CheckedNumElements(
          std::vector<int64_t>(t.dims.begin() + 1, t.dims.end()));
      const uint64_t row_bytes = *ir::DTypeByteSize(t.dtype, row_elems);
      slice.dims[0] = end - begin;
      slice.data = ir::TensorData::View(arrays, t.data.data() + begin * row_bytes,
                                        (end - begin) * row_bytes);
    }
    ASSIGN_OR_RETURN(runtime::RtTensor rt, runtime::RtTensor::FromIrKeepingDType(slice));
    s.inputs.emplace(t.name, std::move(rt));
  }
  next_row = end;
  return s;
}

absl::StatusOr<std::optional<Sample>> Dataset::Impl::NextTokens() {
  const std::string& path = paths[file_index];
  std::string line;
  while (std::getline(*tokens, line)) {
    ++token_line;
    std::istringstream words(line);
    std::vector<int64_t> ids;
    std::string w;
    while (words >> w) {
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(w.c_str(), &end, 10);
      if (*end != '\0' || errno != 0 || v < 0 || v > INT32_MAX) {
        return absl::InvalidArgumentError(
            path + ":" + std::to_string(token_line) + ": token '" + w +
            "' is not an integer id in [0, 2147483647]");
      }
      ids.push_back(v);
    }
    if (ids.empty()) continue;
    RETURN_IF_ERROR(
        CheckTokenIds(ids, options.vocab_size, path + ":" + std::to_string(token_line)));
    if (options.max_positions > 0 && static_cast<int64_t>(ids.size()) > options.max_positions) {
      return absl::InvalidArgumentError(
          path + ":" + std::to_string(token_line) + ": " + std::to_string(ids.size()) +
          " tokens, more than the model's max_position_embeddings " +
          std::to_string(options.max_positions) + " (config.json); split the line");
    }
    const int64_t len = static_cast<int64_t>(ids.size());
    Sample s;
    s.source = BaseName(path) + ":" + std::to_string(token_line);
    s.rows = 1;
    for (const ir::ValueInfo& in : inputs) {
      std::vector<int64_t> values;
      if (in.name == "attention_mask") {
        values.assign(len, 1);
      } else if (in.name == "position_ids") {
        for (int64_t i = 0; i < len; ++i) values.push_back(i);
      } else {
        values = ids;
      }
      if (in.shape.rank_known() && in.shape.rank() == 2 &&
          in.shape.dim(1).is_static() && in.shape.dim(1).value != len) {
        return absl::InvalidArgumentError(
            path + ":" + std::to_string(token_line) + ": " + std::to_string(len) +
            " tokens, input '" + in.name + "' needs " +
            std::to_string(in.shape.dim(1).value));
      }
      if (in.dtype == ir::DType::kI64) {
        s.inputs.emplace(in.name, runtime::RtTensor::FromVector<int64_t>({1, len}, values));
      } else {
        std::vector<int32_t> v32(values.begin(), values.end());
        s.inputs.emplace(in.name, runtime::RtTensor::FromVector<int32_t>({1, len}, v32));
      }
    }
    return std::optional<Sample>(std::move(s));
  }
  return std::optional<Sample>();
}

absl::StatusOr<Sample> Dataset::Impl::RandomSample() {
  // Each sample has its own stream, so sample k is the same whatever was
  // read before it.
  uint64_t state = seed ^ (0xd1b54a32d192ed03ULL * static_cast<uint64_t>(random_index + 1));
  Sample s;
  s.source = "random#" + std::to_string(random_index);
  s.rows = 1;
  for (const ir::ValueInfo& in : inputs) {
    std::vector<int64_t> dims;
    for (const ir::Dim& d : in.shape.dims()) dims.push_back(d.is_static() ? d.value : 1);
    ASSIGN_OR_RETURN(runtime::RtTensor t, runtime::RtTensor::Allocate(in.dtype == ir::DType::kF32 || IsIntegerType(in.dtype) ||
                                                            in.dtype == ir::DType::kBool || in.dtype == ir::DType::kF16
                                                        ? in.dtype
                                                        : ir::DType::kUndefined,
                                                    dims));
    const int64_t n = t.num_elements();
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t r = SplitMix64(state);
      switch (in.dtype) {
        case ir::DType::kF32:
          t.mutable_data<float>()[i] = static_cast<float>((r >> 40) * 0x1.0p-24 * 2 - 1);
          break;
        case ir::DType::kF16:  // the f32 draw rounded to f16
          t.mutable_data<uint16_t>()[i] =
              ir::F32ToF16(static_cast<float>((r >> 40) * 0x1.0p-24 * 2 - 1));
          break;
        case ir::DType::kI64: t.mutable_data<int64_t>()[i] = static_cast<int64_t>(r % 16); break;
        case ir::DType::kI32: t.mutable_data<int32_t>()[i] = static_cast<int32_t>(r % 16); break;
        default: t.mutable_data<uint8_t>()[i] = r & 1; break;
      }
    }
    s.inputs.emplace(in.name, std::move(t));
  }
  ++random_index;
  return s;
}

Dataset::Dataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dataset::Dataset(Dataset&&) noexcept = default;
Dataset& Dataset::operator=(Dataset&&) noexcept = default;
Dataset::~Dataset() = default;

absl::StatusOr<Dataset> Dataset::Open(const std::vector<std::string>& paths,
                                      std::vector<ir::ValueInfo> inputs,
                                      DatasetOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->inputs = std::move(inputs);
  impl->options = std::move(options);
  if (impl->options.max_batch < 1) {
    return absl::InvalidArgumentError("max_batch must be >= 1, got " +
                                      std::to_string(impl->options.max_batch));
  }
  ASSIGN_OR_RETURN(impl->paths, ExpandDataPaths(paths));
  for (const std::string& p : impl->paths) {
    if (KindOf(p) == FileKind::kTokens) RETURN_IF_ERROR(CheckTokenInputs(p, impl->inputs));
  }
  ASSIGN_OR_RETURN(impl->digests, DigestDataFiles(impl->paths));
  return Dataset(std::move(impl));
}

absl::StatusOr<Dataset> Dataset::Random(int64_t samples, uint64_t seed,
                                        std::vector<ir::ValueInfo> inputs) {
  if (samples < 1) {
    return absl::InvalidArgumentError("random sample count must be >= 1, got " +
                                      std::to_string(samples));
  }
  for (const auto& in : inputs) {
    if (in.dtype != ir::DType::kF32 && in.dtype != ir::DType::kF16 && !IsIntegerType(in.dtype) &&
        in.dtype != ir::DType::kBool) {
      return absl::UnimplementedError(
          "random data for input '" + in.name + "' of dtype " +
          std::string(ir::DTypeName(in.dtype)) + " (supported: f32, f16, i64, i32, bool)");
    }
    if (!in.shape.rank_known()) {
      return absl::InvalidArgumentError("random data for input '" + in.name +
                                        "': its rank is unknown");
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->inputs = std::move(inputs);
  impl->random = true;
  impl->random_samples = samples;
  impl->seed = seed;
  return Dataset(std::move(impl));
}

absl::StatusOr<std::optional<Sample>> Dataset::Next() {
  Impl& m = *impl_;
  if (m.random) {
    if (m.random_index >= m.random_samples) return std::optional<Sample>();
    ASSIGN_OR_RETURN(Sample s, m.RandomSample());
    return std::optional<Sample>(std::move(s));
  }
  while (m.file_index < m.paths.size()) {
    const std::string& path = m.paths[m.file_index];
    const FileKind kind = KindOf(path);
    if (kind == FileKind::kTokens) {
      if (!m.tokens) {
        m.tokens = std::make_unique<std::ifstream>(path);
        m.token_line = 0;
        if (!*m.tokens) return absl::NotFoundError(path + ": cannot open token file");
      }
      ASSIGN_OR_RETURN(auto s, m.NextTokens());
      if (s.has_value()) return s;
      m.tokens.reset();
      ++m.file_index;
      continue;
    }
    if (!m.arrays) RETURN_IF_ERROR(m.LoadArrays(path, kind));
    if (m.next_row < m.rows) {
      ASSIGN_OR_RETURN(Sample s, m.SliceRows());
      return std::optional<Sample>(std::move(s));
    }
    m.arrays.reset();
    ++m.file_index;
  }
  return std::optional<Sample>();
}

void Dataset::Rewind() {
  impl_->file_index = 0;
  impl_->random_index = 0;
  impl_->arrays.reset();
  impl_->tokens.reset();
}

absl::StatusOr<int64_t> Dataset::CountSamples(int64_t max_runs) {
  Rewind();
  int64_t samples = 0;
  for (int64_t run = 0; run < max_runs; ++run) {
    ASSIGN_OR_RETURN(std::optional<Sample> sample, Next());
    if (!sample) break;
    samples += sample->rows;
  }
  Rewind();
  return samples;
}

bool Dataset::is_random() const { return impl_->random; }
uint64_t Dataset::seed() const { return impl_->seed; }
const std::vector<DataFileDigest>& Dataset::files() const { return impl_->digests; }

}  // namespace slimpack::calibration
