#include "converter/awq_input_stats.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "converter/stats_file.h"
#include "formats/safetensors/safetensors_reader.h"
#include "formats/safetensors/safetensors_writer.h"
#include "ir/shape.h"
#include "quantize/gptq_layers.h"
#include "quantize/importance_matrix.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

constexpr char kVersion[] = "1";
constexpr char kMeanAbs[] = ".mean_abs";
constexpr char kRows[] = ".rows";

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() > n && s.compare(s.size() - n, n, suffix) == 0;
}

ir::Tensor F32Tensor(const std::string& name, std::vector<int64_t> dims, const float* v,
                     size_t n) {
  ir::Tensor t;
  t.name = name;
  t.dtype = ir::DType::kF32;
  t.dims = std::move(dims);
  std::vector<uint8_t> bytes(n * sizeof(float));
  if (n > 0) std::memcpy(bytes.data(), v, bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

absl::StatusOr<safetensors::SafetensorsFile> ReadChecked(const std::string& path) {
  return ReadStatsFile(path, {kAwqInputsFormat, kVersion, "an AWQ input file", "--awq-inputs"});
}

}  // namespace

absl::StatusOr<AwqInputStatsSummary> WriteAwqInputStats(const ir::Model& model,
                                                        const std::vector<std::string>& data,
                                                        const quantize::AwqFoldOptions& options,
                                                        const std::string& dataset,
                                                        const std::string& path) {
  // Every linear of the decoder: the groups of all of them.
  std::set<std::string> all;
  for (const ir::Tensor& t : model.graph.initializers()) {
    if (t.layer >= 0 && t.dims.size() == 2) all.insert(t.name);
  }
  ASSIGN_OR_RETURN(ir::Model runnable, quantize::RunnableModel(model));
  ASSIGN_OR_RETURN(calibration::Dataset ds, quantize::OpenCalibrationData(runnable, data));
  ASSIGN_OR_RETURN(const quantize::AwqInputs inputs,
                   quantize::CaptureAwqInputs(model, all, ds, options));
  if (inputs.empty()) {
    return absl::InvalidArgumentError(model.source_path +
                                      ": has no decoder layer whose linears AWQ scales");
  }
  ASSIGN_OR_RETURN(const int64_t samples, ds.CountSamples(options.max_runs));
  std::vector<ir::Tensor> tensors;
  for (const auto& [weight, x] : inputs) {
    const int64_t k = static_cast<int64_t>(x.mean_abs.size());
    std::vector<float> mean(x.mean_abs.begin(), x.mean_abs.end());
    tensors.push_back(F32Tensor(weight + kMeanAbs, {k}, mean.data(), mean.size()));
    tensors.push_back(F32Tensor(weight + kRows, {x.kept, k}, x.samples.data(), x.samples.size()));
  }
  const std::map<std::string, std::string> metadata = {{"format", kAwqInputsFormat},
                                                       {"version", kVersion},
                                                       {"samples", std::to_string(samples)},
                                                       {"dataset", dataset}};
  ASSIGN_OR_RETURN(safetensors::SafetensorsLayout layout,
                   safetensors::LayoutSafetensors(tensors, metadata));
  RETURN_IF_ERROR(safetensors::WriteSafetensorsFile(path, tensors, metadata));
  return AwqInputStatsSummary{inputs.size(), samples, layout.header.size() + layout.data_size};
}

absl::StatusOr<quantize::AwqInputs> ReadAwqInputStats(const ir::Model& model,
                                                      const std::string& path) {
  ASSIGN_OR_RETURN(safetensors::SafetensorsFile file, ReadChecked(path));
  quantize::AwqInputs out;
  std::map<std::string, const ir::Tensor*> means, rows;
  for (const ir::Tensor& t : file.tensors) {
    const bool is_mean = EndsWith(t.name, kMeanAbs), is_rows = EndsWith(t.name, kRows);
    const std::string weight =
        t.name.substr(0, t.name.size() - std::strlen(is_mean ? kMeanAbs : kRows));
    if ((!is_mean && !is_rows) || t.dtype != ir::DType::kF32 ||
        t.dims.size() != (is_mean ? 1u : 2u)) {
      return absl::InvalidArgumentError(
          path + ": tensor '" + t.name + "' is " + std::string(ir::DTypeName(t.dtype)) + " " +
          ir::Shape::FromDims(t.dims).ToString() +
          "; an AWQ input is F32 '<weight>.mean_abs' [K] and '<weight>.rows' [rows, K]");
    }
    if (model.graph.FindInitializer(weight) == nullptr) {
      return absl::InvalidArgumentError(path + ": entry '" + t.name + "' names no weight of " +
                                        model.source_path +
                                        " (statistics made for another model?)");
    }
    (is_mean ? means : rows)[weight] = &t;
  }
  for (const auto& [weight, mean] : means) {
    auto r = rows.find(weight);
    if (r == rows.end() || r->second->dims[1] != mean->dims[0]) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": the input of '", weight, "' has ", mean->dims[0], " mean |x| columns and ",
          r == rows.end() ? std::string("no rows")
                          : absl::StrCat("rows of ", r->second->dims[1], " columns")));
    }
    quantize::CapturedInput x;
    const float* m = reinterpret_cast<const float*>(mean->data.data());
    for (int64_t c = 0; c < mean->dims[0]; ++c) {
      if (!std::isfinite(m[c]) || m[c] < 0) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": '", mean->name, "' column ", c,
                                                        " is ", m[c], ", not a mean |x|"));
      }
    }
    x.mean_abs.assign(m, m + mean->dims[0]);
    const float* v = reinterpret_cast<const float*>(r->second->data.data());
    x.kept = r->second->dims[0];
    x.samples.assign(v, v + x.kept * r->second->dims[1]);
    out[weight] = std::move(x);
  }
  for (const auto& [weight, r] : rows) {
    if (!means.count(weight)) {
      return absl::InvalidArgumentError(path + ": the input of '" + weight +
                                        "' has rows but no mean |x| ('" + weight + kMeanAbs +
                                        "')");
    }
  }
  return out;
}

bool IsAwqInputStats(const std::string& path) { return ReadChecked(path).ok(); }

}  // namespace slimpack::converter
