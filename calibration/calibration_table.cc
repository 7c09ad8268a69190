// Calibration table JSON: writing through nlohmann::json (std::map keys, so
// sorted output) and a strict field-by-field reader that names the JSON path
// of whatever is missing or mistyped.
#include "calibration/calibration_table.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "formats/shard/writer/file_digest.h"
#include "nlohmann/json.hpp"
#include "support/atomic_file.h"
#include "support/status_macros.h"

namespace slimpack::calibration {
namespace {

using nlohmann::json;

constexpr char kFormat[] = "slimpack-calibration";

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Non-finite doubles would become JSON null; observers never produce them,
// but a corrupt tensor must not yield an unreadable table.
double Finite(double v) { return std::isfinite(v) ? v : 0.0; }

json RangeJson(const std::pair<double, double>& r) {
  return json::array({Finite(r.first), Finite(r.second)});
}

json TensorJson(const TensorCalibration& t) {
  const ObservedRange& r = t.range;
  json j = {{"producer", t.producer},
            {"op_type", t.op_type},
            {"dtype", "f32"},
            {"shape", r.last_dims},
            {"runs", r.runs},
            {"elements", r.elements},
            {"nonfinite", r.nonfinite},
            {"min", Finite(r.min)},
            {"max", Finite(r.max)},
            {"range", RangeJson({r.lo, r.hi})},
            {"histogram",
             {{"bins", r.histogram.bins},
              {"half_range", Finite(r.histogram.half_range)},
              {"p50_abs", Finite(r.histogram.p50_abs)},
              {"p99_abs", Finite(r.histogram.p99_abs)},
              {"p999_abs", Finite(r.histogram.p999_abs)},
              {"p9999_abs", Finite(r.histogram.p9999_abs)},
              {"near_zero_fraction", Finite(r.histogram.near_zero_fraction)}}}};
  if (!r.channel_ranges.empty()) {
    j["channel_axis"] = r.channel_axis;
    json ranges = json::array();
    for (const auto& c : r.channel_ranges) ranges.push_back(RangeJson(c));
    j["channel_ranges"] = std::move(ranges);
  }
  return j;
}

json LinearJson(const LinearCalibration& l) {
  json j = {{"op_type", l.layer.op_type},
            {"input", l.layer.input},
            {"weight", l.layer.weight},
            {"in_features", l.layer.in_features},
            {"trans_a", l.layer.trans_a},
            {"rows", l.rows},
            {"mean_abs", l.mean_abs},
            {"mean_sq", l.mean_sq}};
  if (!l.xtx.empty()) j["xtx"] = l.xtx;
  return j;
}

// ---- strict reading ----

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  absl::Status Error(const std::string& path, const std::string& what) const {
    return absl::InvalidArgumentError(source_ + ": " + path + ": " + what);
  }
  absl::StatusOr<const json*> Field(const json& obj, const std::string& path,
                                    const char* key, json::value_t type) const {
    auto it = obj.find(key);
    const std::string p = path + "." + key;
    if (it == obj.end()) return Error(p, "missing field");
    const bool ok = type == json::value_t::number_float
                        ? it->is_number()
                        : type == json::value_t::number_unsigned
                              ? it->is_number_unsigned() || (it->is_number_integer() && *it >= 0)
                              : it->type() == type;
    if (!ok) return Error(p, std::string("expected ") + TypeName(type) + ", found " + it->type_name());
    return &*it;
  }
  absl::StatusOr<double> Number(const json& o, const std::string& path, const char* key) const {
    ASSIGN_OR_RETURN(const json* v, Field(o, path, key, json::value_t::number_float));
    return v->get<double>();
  }
  absl::StatusOr<int64_t> Int(const json& o, const std::string& path, const char* key) const {
    auto it = o.find(key);
    if (it != o.end() && !it->is_number_integer()) {
      return Error(path + "." + key, std::string("expected integer, found ") + it->type_name());
    }
    ASSIGN_OR_RETURN(const json* v, Field(o, path, key, json::value_t::number_float));
    return v->get<int64_t>();
  }
  absl::StatusOr<uint64_t> UInt(const json& o, const std::string& path, const char* key) const {
    ASSIGN_OR_RETURN(const json* v, Field(o, path, key, json::value_t::number_unsigned));
    return v->get<uint64_t>();
  }
  absl::StatusOr<std::string> String(const json& o, const std::string& path, const char* key) const {
    ASSIGN_OR_RETURN(const json* v, Field(o, path, key, json::value_t::string));
    return v->get<std::string>();
  }
  absl::StatusOr<bool> Bool(const json& o, const std::string& path, const char* key) const {
    ASSIGN_OR_RETURN(const json* v, Field(o, path, key, json::value_t::boolean));
    return v->get<bool>();
  }
  absl::StatusOr<std::vector<double>> Numbers(const json& o, const std::string& path,
                                              const char* key) const {
    ASSIGN_OR_RETURN(const json* v, Field(o, path, key, json::value_t::array));
    std::vector<double> out;
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_number()) {
        return Error(path + "." + key + "[" + std::to_string(i) + "]", "expected number");
      }
      out.push_back((*v)[i].get<double>());
    }
    return out;
  }
  absl::StatusOr<std::pair<double, double>> Range(const json& v, const std::string& path) const {
    if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) {
      return Error(path, "expected [lo, hi] (two numbers)");
    }
    const double lo = v[0].get<double>(), hi = v[1].get<double>();
    if (!(lo <= hi)) {
      return Error(path, "lo " + std::to_string(lo) + " > hi " + std::to_string(hi));
    }
    return std::make_pair(lo, hi);
  }

 private:
  static const char* TypeName(json::value_t t) {
    switch (t) {
      case json::value_t::object: return "object";
      case json::value_t::array: return "array";
      case json::value_t::string: return "string";
      case json::value_t::boolean: return "boolean";
      case json::value_t::number_unsigned: return "non-negative integer";
      default: return "number";
    }
  }
  std::string source_;
};

absl::StatusOr<TensorCalibration> ReadTensor(const Reader& rd, const json& j,
                                             const std::string& path) {
  TensorCalibration t;
  ObservedRange& r = t.range;
  ASSIGN_OR_RETURN(t.producer, rd.String(j, path, "producer"));
  ASSIGN_OR_RETURN(t.op_type, rd.String(j, path, "op_type"));
  ASSIGN_OR_RETURN(std::string dtype, rd.String(j, path, "dtype"));
  if (dtype != "f32") return rd.Error(path + ".dtype", "expected \"f32\", found \"" + dtype + "\"");
  ASSIGN_OR_RETURN(const json* shape, rd.Field(j, path, "shape", json::value_t::array));
  for (const json& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return rd.Error(path + ".shape", "expected non-negative integers");
    }
    r.last_dims.push_back(d.get<int64_t>());
  }
  ASSIGN_OR_RETURN(r.runs, rd.Int(j, path, "runs"));
  ASSIGN_OR_RETURN(r.elements, rd.UInt(j, path, "elements"));
  ASSIGN_OR_RETURN(r.nonfinite, rd.UInt(j, path, "nonfinite"));
  ASSIGN_OR_RETURN(r.min, rd.Number(j, path, "min"));
  ASSIGN_OR_RETURN(r.max, rd.Number(j, path, "max"));
  ASSIGN_OR_RETURN(const json* range, rd.Field(j, path, "range", json::value_t::array));
  ASSIGN_OR_RETURN(auto lohi, rd.Range(*range, path + ".range"));
  r.lo = lohi.first;
  r.hi = lohi.second;
  const std::string hp = path + ".histogram";
  ASSIGN_OR_RETURN(const json* h, rd.Field(j, path, "histogram", json::value_t::object));
  ASSIGN_OR_RETURN(r.histogram.bins, rd.Int(*h, hp, "bins"));
  ASSIGN_OR_RETURN(r.histogram.half_range, rd.Number(*h, hp, "half_range"));
  ASSIGN_OR_RETURN(r.histogram.p50_abs, rd.Number(*h, hp, "p50_abs"));
  ASSIGN_OR_RETURN(r.histogram.p99_abs, rd.Number(*h, hp, "p99_abs"));
  ASSIGN_OR_RETURN(r.histogram.p999_abs, rd.Number(*h, hp, "p999_abs"));
  ASSIGN_OR_RETURN(r.histogram.p9999_abs, rd.Number(*h, hp, "p9999_abs"));
  ASSIGN_OR_RETURN(r.histogram.near_zero_fraction, rd.Number(*h, hp, "near_zero_fraction"));
  if (j.contains("channel_ranges")) {
    ASSIGN_OR_RETURN(int64_t axis, rd.Int(j, path, "channel_axis"));
    r.channel_axis = static_cast<int>(axis);
    ASSIGN_OR_RETURN(const json* cr, rd.Field(j, path, "channel_ranges", json::value_t::array));
    for (size_t i = 0; i < cr->size(); ++i) {
      ASSIGN_OR_RETURN(auto c, rd.Range((*cr)[i], path + ".channel_ranges[" + std::to_string(i) + "]"));
      r.channel_ranges.push_back(c);
    }
  }
  return t;
}

absl::StatusOr<LinearCalibration> ReadLinear(const Reader& rd, const json& j,
                                             const std::string& path) {
  LinearCalibration l;
  ASSIGN_OR_RETURN(l.layer.op_type, rd.String(j, path, "op_type"));
  ASSIGN_OR_RETURN(l.layer.input, rd.String(j, path, "input"));
  ASSIGN_OR_RETURN(l.layer.weight, rd.String(j, path, "weight"));
  ASSIGN_OR_RETURN(l.layer.in_features, rd.Int(j, path, "in_features"));
  ASSIGN_OR_RETURN(l.layer.trans_a, rd.Bool(j, path, "trans_a"));
  ASSIGN_OR_RETURN(l.rows, rd.UInt(j, path, "rows"));
  ASSIGN_OR_RETURN(l.mean_abs, rd.Numbers(j, path, "mean_abs"));
  ASSIGN_OR_RETURN(l.mean_sq, rd.Numbers(j, path, "mean_sq"));
  const size_t k = static_cast<size_t>(std::max<int64_t>(0, l.layer.in_features));
  if (l.mean_abs.size() != k || l.mean_sq.size() != k) {
    return rd.Error(path, "mean_abs/mean_sq have " + std::to_string(l.mean_abs.size()) + "/" +
                              std::to_string(l.mean_sq.size()) + " entries, expected in_features " +
                              std::to_string(k));
  }
  if (j.contains("xtx")) {
    ASSIGN_OR_RETURN(l.xtx, rd.Numbers(j, path, "xtx"));
    if (l.xtx.size() != k * k) {
      return rd.Error(path + ".xtx", std::to_string(l.xtx.size()) + " entries, expected " +
                                         std::to_string(k * k) + " (in_features^2)");
    }
  }
  return l;
}

}  // namespace

absl::StatusOr<std::string> ModelDigest(const ir::Model& model) {
  std::vector<std::string> files = model.input_files;
  if (files.empty()) files.push_back(model.source_path);
  if (files.size() == 1) {
    ASSIGN_OR_RETURN(auto d, shard_writer::HashFile(files[0]));
    return d.sha256;
  }
  std::string lines;
  for (const std::string& f : files) {
    ASSIGN_OR_RETURN(auto d, shard_writer::HashFile(f));
    lines += d.sha256 + " " + BaseName(f) + "\n";
  }
  return shard_writer::Sha256Stream::HashHex(lines.data(), lines.size());
}

std::string SerializeCalibrationTable(const CalibrationTable& t) {
  json files = json::array();
  for (const auto& f : t.files) {
    files.push_back({{"name", f.name}, {"bytes", f.bytes}, {"sha256", f.sha256}});
  }
  const ObserverOptions& m = t.method;
  json tensors = json::object();
  for (const auto& [name, tc] : t.tensors) tensors[name] = TensorJson(tc);
  json linears = json::object();
  for (const auto& [name, lc] : t.linears) linears[name] = LinearJson(lc);
  json j = {{"format", kFormat},
            {"version", kCalibrationTableVersion},
            {"model", {{"name", t.model_name}, {"sha256", t.model_sha256}}},
            {"method",
             {{"name", RangeMethodName(m.method)},
              {"per_channel", m.per_channel},
              {"channel_axis", m.channel_axis},
              {"num_bins", m.num_bins},
              {"percentile", m.percentile},
              {"entropy_levels", m.entropy_levels},
              {"mse_levels", m.mse_levels},
              {"averaging_constant", m.averaging_constant}}},
            {"dataset",
             {{"kind", t.random_data ? "random" : "files"},
              {"seed", t.seed},
              {"samples", t.samples},
              {"runs", t.runs},
              {"files", std::move(files)}}},
            {"tensors", std::move(tensors)},
            {"linears", std::move(linears)}};
  return j.dump(2) + "\n";
}

absl::StatusOr<CalibrationTable> ParseCalibrationTable(std::string_view text,
                                                       const std::string& source) {
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(source + ": not valid JSON");
  if (!j.is_object()) return absl::InvalidArgumentError(source + ": top level is not an object");
  Reader rd(source);
  CalibrationTable t;
  ASSIGN_OR_RETURN(std::string format, rd.String(j, "$", "format"));
  if (format != kFormat) {
    return absl::UnimplementedError(source + ": format \"" + format +
                                    "\" is not a calibration table (expected \"" + kFormat + "\")");
  }
  ASSIGN_OR_RETURN(int64_t version, rd.Int(j, "$", "version"));
  if (version != kCalibrationTableVersion) {
    return absl::UnimplementedError(source + ": calibration table version " +
                                    std::to_string(version) + " (supported: " +
                                    std::to_string(kCalibrationTableVersion) + ")");
  }
  ASSIGN_OR_RETURN(const json* model, rd.Field(j, "$", "model", json::value_t::object));
  ASSIGN_OR_RETURN(t.model_name, rd.String(*model, "$.model", "name"));
  ASSIGN_OR_RETURN(t.model_sha256, rd.String(*model, "$.model", "sha256"));
  if (t.model_sha256.size() != 64 ||
      t.model_sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return rd.Error("$.model.sha256", "expected 64 lowercase hex digits");
  }
  ASSIGN_OR_RETURN(const json* m, rd.Field(j, "$", "method", json::value_t::object));
  ASSIGN_OR_RETURN(std::string method, rd.String(*m, "$.method", "name"));
  auto parsed = RangeMethodFromName(method);
  if (!parsed.ok()) return rd.Error("$.method.name", std::string(parsed.status().message()));
  t.method.method = *parsed;
  ASSIGN_OR_RETURN(t.method.per_channel, rd.Bool(*m, "$.method", "per_channel"));
  ASSIGN_OR_RETURN(int64_t axis, rd.Int(*m, "$.method", "channel_axis"));
  t.method.channel_axis = static_cast<int>(axis);
  ASSIGN_OR_RETURN(int64_t bins, rd.Int(*m, "$.method", "num_bins"));
  t.method.num_bins = static_cast<int>(bins);
  ASSIGN_OR_RETURN(t.method.percentile, rd.Number(*m, "$.method", "percentile"));
  ASSIGN_OR_RETURN(int64_t el, rd.Int(*m, "$.method", "entropy_levels"));
  t.method.entropy_levels = static_cast<int>(el);
  ASSIGN_OR_RETURN(int64_t ml, rd.Int(*m, "$.method", "mse_levels"));
  t.method.mse_levels = static_cast<int>(ml);
  ASSIGN_OR_RETURN(t.method.averaging_constant, rd.Number(*m, "$.method", "averaging_constant"));

  ASSIGN_OR_RETURN(const json* ds, rd.Field(j, "$", "dataset", json::value_t::object));
  ASSIGN_OR_RETURN(std::string kind, rd.String(*ds, "$.dataset", "kind"));
  if (kind != "files" && kind != "random") {
    return rd.Error("$.dataset.kind", "\"" + kind + "\" (expected \"files\" or \"random\")");
  }
  t.random_data = kind == "random";
  ASSIGN_OR_RETURN(t.seed, rd.UInt(*ds, "$.dataset", "seed"));
  ASSIGN_OR_RETURN(t.samples, rd.Int(*ds, "$.dataset", "samples"));
  ASSIGN_OR_RETURN(t.runs, rd.Int(*ds, "$.dataset", "runs"));
  ASSIGN_OR_RETURN(const json* files, rd.Field(*ds, "$.dataset", "files", json::value_t::array));
  for (size_t i = 0; i < files->size(); ++i) {
    const std::string p = "$.dataset.files[" + std::to_string(i) + "]";
    const json& f = (*files)[i];
    if (!f.is_object()) return rd.Error(p, "expected object");
    DataFileDigest d;
    ASSIGN_OR_RETURN(d.name, rd.String(f, p, "name"));
    ASSIGN_OR_RETURN(d.bytes, rd.UInt(f, p, "bytes"));
    ASSIGN_OR_RETURN(d.sha256, rd.String(f, p, "sha256"));
    t.files.push_back(std::move(d));
  }
  ASSIGN_OR_RETURN(const json* tensors, rd.Field(j, "$", "tensors", json::value_t::object));
  for (const auto& [name, v] : tensors->items()) {
    const std::string p = "$.tensors['" + name + "']";
    if (!v.is_object()) return rd.Error(p, "expected object");
    ASSIGN_OR_RETURN(TensorCalibration tc, ReadTensor(rd, v, p));
    t.tensors.emplace(name, std::move(tc));
  }
  ASSIGN_OR_RETURN(const json* linears, rd.Field(j, "$", "linears", json::value_t::object));
  for (const auto& [name, v] : linears->items()) {
    const std::string p = "$.linears['" + name + "']";
    if (!v.is_object()) return rd.Error(p, "expected object");
    ASSIGN_OR_RETURN(LinearCalibration lc, ReadLinear(rd, v, p));
    lc.layer.node = name;
    t.linears.emplace(name, std::move(lc));
  }
  return t;
}

absl::Status WriteCalibrationTable(const CalibrationTable& table, const std::string& path) {
  const std::string text = SerializeCalibrationTable(table);
  ASSIGN_OR_RETURN(auto file, AtomicFile::Create(path));
  RETURN_IF_ERROR(file->Write(text.data(), text.size()));
  return file->Commit();
}

absl::StatusOr<CalibrationTable> LoadCalibrationTable(const std::string& path,
                                                      const std::string& expected_model_sha256) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path + ": cannot open calibration table");
  std::ostringstream buf;
  buf << in.rdbuf();
  ASSIGN_OR_RETURN(CalibrationTable t, ParseCalibrationTable(buf.str(), path));
  if (!expected_model_sha256.empty() && t.model_sha256 != expected_model_sha256) {
    return absl::FailedPreconditionError(
        path + ": calibrated for model '" + t.model_name + "' sha256 " + t.model_sha256 +
        ", but this model's sha256 is " + expected_model_sha256);
  }
  return t;
}

}  // namespace slimpack::calibration
