#include "converter/hessian_stats.h"

#include <cstdlib>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "converter/stats_file.h"
#include "formats/safetensors/safetensors_reader.h"
#include "formats/safetensors/safetensors_writer.h"
#include "ir/shape.h"
#include "support/atomic_file.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

constexpr char kVersion[] = "1";

absl::StatusOr<safetensors::SafetensorsFile> ReadChecked(const std::string& path) {
  return ReadStatsFile(path, {kHessianFormat, kVersion, "a Hessian file", "--hessians"});
}

class FileHessians : public quantize::HessianSource {
 public:
  FileHessians(safetensors::SafetensorsFile file, int64_t samples)
      : file_(std::move(file)), samples_(samples) {
    for (size_t i = 0; i < file_.tensors.size(); ++i) index_[file_.tensors[i].name] = i;
    dataset_ = file_.metadata["dataset"];
  }
  const std::string& file() const override { return file_.path; }
  const std::string& dataset() const override { return dataset_; }
  int64_t samples() const override { return samples_; }
  std::optional<int64_t> Columns(const std::string& weight) const override {
    auto it = index_.find(weight);
    if (it == index_.end()) return std::nullopt;
    return file_.tensors[it->second].dims[0];
  }
  absl::StatusOr<quantize::LinearHessian> Read(const std::string& weight) const override {
    auto it = index_.find(weight);
    if (it == index_.end()) return absl::NotFoundError("no Hessian for '" + weight + "'");
    const ir::Tensor& t = file_.tensors[it->second];
    const float* v = reinterpret_cast<const float*>(t.data.data());
    quantize::LinearHessian h;
    h.xtx.assign(v, v + t.dims[0] * t.dims[1]);
    h.rows = 1;  // the stored values are means
    return h;
  }

 private:
  safetensors::SafetensorsFile file_;
  int64_t samples_;
  std::string dataset_;
  std::map<std::string, size_t> index_;
};

}  // namespace

absl::StatusOr<HessianStatsSummary> WriteHessianStats(const ir::Model& model,
                                                      const std::vector<std::string>& data,
                                                      const quantize::FloatHessianOptions& options,
                                                      const std::string& dataset,
                                                      const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<quantize::LinearInput> linears, quantize::LinearInputs(model));
  if (linears.empty()) {
    return absl::InvalidArgumentError(model.source_path +
                                      ": has no linear layer (MatMul/Gemm with a constant "
                                      "weight) to compute a Hessian for");
  }
  // The header first (every size is known), zeros for the data, then each
  // Hessian over its zeros as its group completes.
  std::vector<ir::Tensor> entries;
  std::set<std::string> seen;
  for (const quantize::LinearInput& l : linears) {
    if (!seen.insert(l.weight).second) continue;  // a weight two layers share
    ir::Tensor t;
    t.name = l.weight;
    t.dtype = ir::DType::kF32;
    t.dims = {l.in_features, l.in_features};
    t.data = ir::TensorData::Deferred(static_cast<uint64_t>(l.in_features * l.in_features) * 4);
    entries.push_back(std::move(t));
  }
  ASSIGN_OR_RETURN(const int64_t samples,
                   quantize::CountCalibrationSamples(model, data, options.max_runs));
  const std::map<std::string, std::string> metadata = {
      {"format", kHessianFormat},
      {"version", kVersion},
      {"samples", std::to_string(samples)},
      {"dataset", dataset}};
  ASSIGN_OR_RETURN(safetensors::SafetensorsLayout layout,
                   safetensors::LayoutSafetensors(entries, metadata));
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < entries.size(); ++i) index[entries[i].name] = i;
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> out, AtomicFile::Create(path));
  RETURN_IF_ERROR(out->Write(layout.header.data(), layout.header.size()));
  RETURN_IF_ERROR(out->WriteZeros(layout.data_size));
  std::vector<bool> written(entries.size(), false);
  std::vector<float> mean;
  auto sink = [&](const std::string& weight, const quantize::CapturedInput& c) -> absl::Status {
    auto it = index.find(weight);
    if (it == index.end() || written[it->second]) return absl::OkStatus();
    const ir::Tensor& e = entries[it->second];
    if (c.xtx.size() != static_cast<size_t>(e.dims[0] * e.dims[1]) || c.rows == 0) {
      return absl::InternalError(absl::StrCat("the capture of '", weight, "' holds ",
                                              c.xtx.size(), " values over ", c.rows, " rows"));
    }
    mean.resize(c.xtx.size());
    const double n = static_cast<double>(c.rows);
    for (size_t i = 0; i < mean.size(); ++i) mean[i] = static_cast<float>(c.xtx[i] / n);
    written[it->second] = true;
    return out->WriteAt(layout.header.size() + layout.begin[it->second], mean.data(),
                        mean.size() * sizeof(float));
  };
  RETURN_IF_ERROR(quantize::ComputeFloatHessians(model, data, options, sink).status());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!written[i]) {
      return absl::InternalError("no Hessian was captured for '" + entries[i].name + "'");
    }
  }
  RETURN_IF_ERROR(out->Commit());
  return HessianStatsSummary{entries.size(), samples, layout.header.size() + layout.data_size};
}

absl::StatusOr<std::shared_ptr<const quantize::HessianSource>> OpenHessianStats(
    const ir::Model& model, const std::string& path) {
  ASSIGN_OR_RETURN(safetensors::SafetensorsFile file, ReadChecked(path));
  // Recorded by WriteHessianStats; only reported (GGUF metadata), so a
  // hand-made file without it is read as 0 samples.
  int64_t samples = 0;
  if (auto it = file.metadata.find("samples"); it != file.metadata.end()) {
    char* end = nullptr;
    const long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || v < 0) {
      return absl::InvalidArgumentError(path + ": metadata \"samples\" is '" + it->second +
                                        "', not a count of calibration samples");
    }
    samples = v;
  }
  for (const ir::Tensor& t : file.tensors) {
    if (t.dtype != ir::DType::kF32 || t.dims.size() != 2 || t.dims[0] != t.dims[1] ||
        t.dims[0] == 0) {
      return absl::InvalidArgumentError(
          path + ": tensor '" + t.name + "' is " + std::string(ir::DTypeName(t.dtype)) + " " +
          ir::Shape::FromDims(t.dims).ToString() + "; a Hessian is F32 [K, K]");
    }
    if (model.graph.FindInitializer(t.name) == nullptr) {
      return absl::InvalidArgumentError(path + ": entry '" + t.name + "' names no weight of " +
                                        model.source_path +
                                        " (statistics made for another model?)");
    }
  }
  return std::make_shared<FileHessians>(std::move(file), samples);
}

bool IsHessianStats(const std::string& path) { return ReadChecked(path).ok(); }

}  // namespace slimpack::converter
