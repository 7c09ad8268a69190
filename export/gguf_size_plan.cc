#include "export/gguf_size_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "export/gguf_encode.h"
#include "export/gguf_llama_plan.h"
#include "formats/gguf/ggml_blocks.h"
#include "support/status_macros.h"
#include "support/threads.h"

namespace slimpack::gguf_export {
namespace {

using gguf::TensorType;

constexpr TensorType kAllTypes[] = {TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ4_0,
                                    TensorType::kQ4_1, TensorType::kQ4_K, TensorType::kQ5_0,
                                    TensorType::kQ5_1, TensorType::kQ5_K, TensorType::kQ6_K,
                                    TensorType::kQ8_0};

// One way to store a matrix: its type, total bits and summed squared error.
struct Option {
  TensorType type;
  double bits;
  double error;
};

struct Matrix {
  std::string tensor;  // checkpoint name
  double weights = 0;
  std::vector<Option> hull;  // lower convex hull, bits ascending
  size_t at = 0;             // the option chosen
};

std::string EscapeRegex(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// Summed squared error of `values` stored as `type`, column j weighted by
// importance[j] (1 without): encoded and decoded row by row on threads,
// each row's sum kept apart and added in row order (the same result for
// any thread count).
absl::StatusOr<double> StoredError(TensorType type, const std::vector<float>& values,
                                   int64_t rows, int64_t cols, const float* importance,
                                   int threads, std::vector<uint8_t>& encoded) {
  const int64_t row_bytes = gguf::RowBytes(type, cols);
  encoded.resize(static_cast<size_t>(row_bytes * rows));
  RETURN_IF_ERROR(EncodeRows(type, values, rows, cols, importance, threads, encoded.data(),
                             encoded.size()));
  std::vector<double> row_error(static_cast<size_t>(rows));
  std::vector<absl::Status> part_status;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, rows));
  part_status.resize(static_cast<size_t>(parts));
  support::RunOnThreads(parts, [&](int64_t part) {
    std::vector<float> decoded(static_cast<size_t>(cols));
    for (int64_t r = rows * part / parts; r < rows * (part + 1) / parts; ++r) {
      absl::Status s =
          gguf::DequantizeRow(type, encoded.data() + r * row_bytes, cols, decoded.data());
      if (!s.ok()) {
        part_status[part] = s;
        return;
      }
      double sum = 0;
      const float* x = values.data() + r * cols;
      for (int64_t j = 0; j < cols; ++j) {
        const double d = static_cast<double>(x[j]) - decoded[j];
        sum += (importance ? importance[j] : 1.0) * d * d;
      }
      row_error[r] = sum;
    }
  });
  for (const absl::Status& s : part_status) RETURN_IF_ERROR(s);
  double total = 0;
  for (double e : row_error) total += e;
  return total;
}

// The options no mix of the others beats: bits ascending, error strictly
// falling, and convex (each upgrade buys less per bit than the one before),
// so spending bits greedily on the steepest upgrade is optimal per matrix.
std::vector<Option> LowerHull(std::vector<Option> options) {
  std::sort(options.begin(), options.end(), [](const Option& a, const Option& b) {
    return a.bits != b.bits ? a.bits < b.bits : a.error < b.error;
  });
  std::vector<Option> hull;
  for (const Option& o : options) {
    if (!hull.empty() && o.error >= hull.back().error) continue;  // dominated
    while (hull.size() >= 2) {
      const Option& a = hull[hull.size() - 2];
      const Option& b = hull.back();
      // b lies on or above the segment a-o: drop it.
      if ((b.error - a.error) * (o.bits - a.bits) >= (o.error - a.error) * (b.bits - a.bits)) {
        hull.pop_back();
      } else {
        break;
      }
    }
    hull.push_back(o);
  }
  return hull;
}

}  // namespace

absl::StatusOr<GgmlSizePlan> PlanGgmlTypesForSize(const ir::Model& model,
                                                  const GgufExportOptions& options,
                                                  const GgmlSizeTarget& target) {
  if (!options.type_overrides.empty()) {
    return absl::InvalidArgumentError(
        "a size target plans every matrix's type: give it without --tensor-type or recipe rules");
  }
  if (!(target.bits_per_weight > 0) || target.bits_per_weight > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("target ", target.bits_per_weight, " bits per weight is not in (0, 16]"));
  }
  std::vector<TensorType> candidates = target.candidates;
  if (candidates.empty()) candidates.assign(std::begin(kAllTypes), std::end(kAllTypes));
  ASSIGN_OR_RETURN(ExportPlan plan, PlanExport(model, options));
  // The preset's own mix, measured the same way, for comparison.
  TypeChooser chooser = ChooserFor(plan, options.importance.has_value());
  // With an importance matrix, errors are weighted by mean squared input
  // activations; a matrix it does not cover (the token embedding, which no
  // matmul reads) is scored at the mean over all columns it does cover, so
  // both kinds of error are on one scale.
  double mean_importance = 1;
  if (options.importance) {
    double sum = 0, count = 0;
    for (const auto& entry : options.importance->columns) {
      for (float v : entry.second) sum += v;
      count += static_cast<double>(entry.second.size());
    }
    if (count > 0 && sum > 0) mean_importance = sum / count;
  }
  double preset_bits = 0, preset_error = 0;
  std::vector<Matrix> matrices;
  std::vector<float> values;
  std::vector<uint8_t> encoded;
  double total_weights = 0, fixed_bits = 0;
  for (const Planned& p : plan.planned) {
    const TensorType preset_type = chooser.Choose(p.slot).type;  // every tensor, in order
    if (p.slot.rank < 2) continue;
    const int64_t cols = p.slot.row_length;
    const int64_t rows = p.source->dims[0];
    const double weights = static_cast<double>(rows) * cols;
    total_weights += weights;
    if (p.carried || p.source->quant.quantized()) {
      // Codes carried as they are, or re-encoded in the preset's choice:
      // their bits count, their type is fixed.
      const TensorType t = p.carried ? *p.carried : preset_type;
      fixed_bits += static_cast<double>(gguf::RowBytes(t, cols)) * 8 * rows;
      continue;
    }
    const float* importance = nullptr;
    double unweighted_scale = 1;  // for a matrix without importance
    if (options.importance) {
      auto it = options.importance->columns.find(p.gguf_name);
      if (it != options.importance->columns.end() &&
          static_cast<int64_t>(it->second.size()) == cols) {
        importance = it->second.data();
      } else {
        unweighted_scale = mean_importance;
      }
    }
    if (std::none_of(candidates.begin(), candidates.end(),
                     [cols](TensorType t) { return cols % gguf::BlockSize(t) == 0; })) {
      // No candidate fits the row: f16, as the export's fallback (nothing read).
      fixed_bits += 16.0 * weights;
      continue;
    }
    RETURN_IF_ERROR(ReadValuesF32(p, static_cast<uint64_t>(weights), target.threads, values));
    Matrix m;
    m.tensor = p.source->name;
    m.weights = weights;
    std::vector<Option> opts;
    for (TensorType t : candidates) {
      if (cols % gguf::BlockSize(t) != 0) continue;
      absl::StatusOr<double> err =
          StoredError(t, values, rows, cols, importance, target.threads, encoded);
      if (!err.ok()) return Annotate(err.status(), absl::StrCat("tensor '", m.tensor, "'"));
      opts.push_back({t, static_cast<double>(gguf::RowBytes(t, cols)) * 8 * rows,
                      *err * unweighted_scale});
    }
    const auto preset_option = std::find_if(opts.begin(), opts.end(), [&](const Option& o) {
      return o.type == preset_type;
    });
    if (preset_option != opts.end()) {
      preset_bits += preset_option->bits;
      preset_error += preset_option->error;
    } else {  // a float type (error 0) or a type outside the candidates
      ASSIGN_OR_RETURN(double e, preset_type == TensorType::kF16 || preset_type == TensorType::kF32 ||
                                         preset_type == TensorType::kBF16
                                     ? absl::StatusOr<double>(0.0)
                                     : StoredError(preset_type, values, rows, cols, importance,
                                                   target.threads, encoded));
      preset_bits += static_cast<double>(gguf::RowBytes(preset_type, cols)) * 8 * rows;
      preset_error += e * unweighted_scale;
    }
    m.hull = LowerHull(std::move(opts));
    matrices.push_back(std::move(m));
  }
  if (matrices.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        model.source_path, ": no float matrix whose rows divide a candidate type's block"));
  }
  // Bit counts are whole numbers held exactly in doubles; the budget gets a
  // relative 1e-9 of slack so a target computed as bits / weights (another
  // plan's size) admits that plan.
  const double budget = std::floor(target.bits_per_weight * total_weights * (1 + 1e-9));
  double bits = fixed_bits;
  for (const Matrix& m : matrices) bits += m.hull.front().bits;
  if (bits > budget) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target ", target.bits_per_weight, " bits per weight is below the ",
        bits / total_weights, " the smallest candidate types reach on ", model.source_path));
  }
  // Greedy along the hulls: the upgrade with the most error removed per
  // bit that still fits, ties to the earlier matrix (file order).
  while (true) {
    int best = -1;
    double best_gain = 0;
    for (size_t i = 0; i < matrices.size(); ++i) {
      const Matrix& m = matrices[i];
      if (m.at + 1 >= m.hull.size()) continue;
      const Option& now = m.hull[m.at];
      const Option& next = m.hull[m.at + 1];
      if (bits - now.bits + next.bits > budget) continue;
      const double gain = (now.error - next.error) / (next.bits - now.bits);
      if (best < 0 || gain > best_gain) {
        best = static_cast<int>(i);
        best_gain = gain;
      }
    }
    if (best < 0) break;
    Matrix& m = matrices[static_cast<size_t>(best)];
    bits += m.hull[m.at + 1].bits - m.hull[m.at].bits;
    ++m.at;
  }
  GgmlSizePlan out;
  out.bits_per_weight = bits / total_weights;
  out.preset_bits_per_weight = (preset_bits + fixed_bits) / total_weights;
  out.preset_error = preset_error;
  for (const Matrix& m : matrices) {
    const Option& o = m.hull[m.at];
    ASSIGN_OR_RETURN(TypeOverride ov,
                     ParseTypeOverride("^" + EscapeRegex(m.tensor) + "$",
                                       std::string(gguf::TypeName(o.type))));
    out.overrides.push_back(std::move(ov));
    out.error += o.error;
    char line[64];
    std::snprintf(line, sizeof(line), " %.2f bpw, error %.3e", o.bits / m.weights, o.error);
    out.lines.push_back(absl::StrCat(m.tensor, " ", std::string(gguf::TypeName(o.type)), line));
  }
  return out;
}

}  // namespace slimpack::gguf_export
