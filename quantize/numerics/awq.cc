// AWQ scale search (see awq.h).
#include "quantize/numerics/awq.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "quantize/numerics/rtn.h"
#include "support/status_macros.h"
#include "support/threads.h"
#include "support/portable_math.h"

namespace slimpack::quant {
namespace {

// Q(W diag(s)) for every linear (RTN, optional weighted clip search).
absl::StatusOr<std::vector<QuantizedMatrix>> QuantizeScaled(
    const std::vector<AwqLinear>& linears, int64_t cols,
    const std::vector<float>& s, const Scheme& scheme, const float* importance,
    int threads) {
  std::vector<QuantizedMatrix> out;
  std::vector<float> ws;
  RtnOptions ro;
  ro.threads = threads;
  ro.importance = importance;
  ro.mse_clip = importance != nullptr;
  for (size_t l = 0; l < linears.size(); ++l) {
    const AwqLinear& lin = linears[l];
    ws.resize(static_cast<size_t>(lin.rows * cols));
    for (int64_t r = 0; r < lin.rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        ws[r * cols + c] = lin.w[r * cols + c] * s[c];
      }
    }
    auto m = QuantizeRtn(ws.data(), lin.rows, cols, scheme, ro);
    if (!m.ok()) {
      return absl::Status(m.status().code(),
                          absl::StrCat("AWQ linear ", l, ": ",
                                       m.status().message()));
    }
    out.push_back(*std::move(m));
  }
  return out;
}

// The linears' weights as their grid decodes them, per linear, row-major.
using Decoded = std::vector<std::vector<float>>;

Decoded DequantizeAll(const std::vector<QuantizedMatrix>& q) {
  Decoded out(q.size());
  for (size_t l = 0; l < q.size(); ++l) {
    out[l].resize(static_cast<size_t>(q[l].rows * q[l].cols));
    Dequantize(q[l], out[l].data());
  }
  return out;
}

// sum over linears, sample rows and outputs of (x . (w - deq/s))^2.
double OutputError(const std::vector<AwqLinear>& linears, int64_t cols,
                   const float* x, int64_t n, const std::vector<float>& s,
                   const Decoded& decoded, int threads) {
  double total = 0;
  for (size_t l = 0; l < linears.size(); ++l) {
    const int64_t rows = linears[l].rows;
    const std::vector<float>& deq = decoded[l];
    std::vector<double> delta(deq.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const float w_hat = deq[r * cols + c] / s[c];
        delta[r * cols + c] =
            static_cast<double>(linears[l].w[r * cols + c]) - w_hat;
      }
    }
    // Per-output-row partial sums, added in row order: thread-independent.
    std::vector<double> part(static_cast<size_t>(rows), 0.0);
    const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(threads, rows));
    auto work = [&](int64_t t) {
      for (int64_t r = t; r < rows; r += nt) {
        const double* d = delta.data() + r * cols;
        double e = 0;
        for (int64_t i = 0; i < n; ++i) {
          const float* xi = x + i * cols;
          double y = 0;
          for (int64_t c = 0; c < cols; ++c) y += xi[c] * d[c];
          e += y * y;
        }
        part[r] = e;
      }
    };
    // Rows of a thread the system refuses run on this one: same sums.
    support::RunOnThreads(nt, work);
    for (double e : part) total += e;
  }
  return total;
}

absl::Status CheckSearchInputs(const std::vector<AwqLinear>& linears, int64_t cols,
                               const float* x, int64_t n, const std::vector<float>& mean_abs_x,
                               const AwqOptions& options) {
  if (linears.empty() || cols < 1 || n < 1 || x == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AWQ: need >= 1 linear, cols >= 1 and a non-empty input sample; got ",
        linears.size(), " linears, cols ", cols, ", n ", n));
  }
  if (options.grid < 1 || options.threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AWQ: grid ", options.grid, " and threads ", options.threads,
        " must be >= 1"));
  }
  if (mean_abs_x.size() != static_cast<size_t>(cols)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AWQ: mean |x| has ", mean_abs_x.size(), " channels, expected ", cols));
  }
  for (int64_t c = 0; c < cols; ++c) {
    if (!std::isfinite(mean_abs_x[c]) || mean_abs_x[c] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AWQ: mean |x| of channel ", c, " is ", mean_abs_x[c]));
    }
  }
  for (int64_t i = 0; i < n * cols; ++i) {
    if (!std::isfinite(x[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AWQ: input sample row ", i / cols, " col ", i % cols, " is ", x[i]));
    }
  }
  for (size_t l = 0; l < linears.size(); ++l) {
    if (linears[l].w == nullptr || linears[l].rows < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("AWQ: linear ", l, " is empty"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<float> AwqScales(const std::vector<float>& mean_abs_x,
                             double alpha) {
  std::vector<double> t(mean_abs_x.size());
  double lo = 0, hi = 0;
  for (size_t c = 0; c < t.size(); ++c) {
    t[c] = std::max(pmath::Pow(static_cast<double>(mean_abs_x[c]), alpha), 1e-4);
    lo = c == 0 ? t[c] : std::min(lo, t[c]);
    hi = c == 0 ? t[c] : std::max(hi, t[c]);
  }
  const double norm = std::sqrt(hi * lo);
  std::vector<float> s(t.size());
  for (size_t c = 0; c < t.size(); ++c) s[c] = static_cast<float>(t[c] / norm);
  return s;
}

absl::StatusOr<AwqResult> SearchAwqScales(const std::vector<AwqLinear>& linears,
                                          int64_t cols, const float* x,
                                          int64_t n,
                                          const std::vector<float>& mean_abs_x,
                                          const Scheme& scheme,
                                          const AwqOptions& options) {
  RETURN_IF_ERROR(CheckSearchInputs(linears, cols, x, n, mean_abs_x, options));
  AwqResult res;
  res.errors.resize(static_cast<size_t>(options.grid));
  int best = 0;
  for (int k = 0; k < options.grid; ++k) {
    const double alpha = static_cast<double>(k) / options.grid;
    const std::vector<float> s = AwqScales(mean_abs_x, alpha);
    auto q = QuantizeScaled(linears, cols, s, scheme, nullptr, options.threads);
    if (!q.ok()) return q.status();
    res.errors[k] = OutputError(linears, cols, x, n, s, DequantizeAll(*q), options.threads);
    if (res.errors[k] < res.errors[best]) best = k;
  }
  res.alpha = static_cast<float>(static_cast<double>(best) / options.grid);
  res.scales = AwqScales(mean_abs_x, static_cast<double>(best) / options.grid);
  res.error_before = res.errors[0];
  res.error_after = res.errors[best];
  auto q = QuantizeScaled(linears, cols, res.scales, scheme, nullptr,
                          options.threads);
  if (!q.ok()) return q.status();
  res.quantized = *std::move(q);
  if (options.clip_search) {
    // Importance of the scaled weights' columns: mean (x / s)^2.
    std::vector<float> imp(static_cast<size_t>(cols), 0.0f);
    std::vector<double> acc(static_cast<size_t>(cols), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < cols; ++c) {
        const double v = static_cast<double>(x[i * cols + c]) / res.scales[c];
        acc[c] += v * v;
      }
    }
    for (int64_t c = 0; c < cols; ++c) imp[c] = static_cast<float>(acc[c] / n);
    auto qc = QuantizeScaled(linears, cols, res.scales, scheme, imp.data(),
                             options.threads);
    if (!qc.ok()) return qc.status();
    const double e = OutputError(linears, cols, x, n, res.scales, DequantizeAll(*qc),
                                 options.threads);
    if (e < res.error_after) {
      res.error_after = e;
      res.clipped = true;
      res.quantized = *std::move(qc);
    }
  }
  return res;
}

absl::StatusOr<AwqGridResult> SearchAwqScalesOnGrids(const std::vector<AwqLinear>& linears,
                                                     int64_t cols, const float* x, int64_t n,
                                                     const std::vector<float>& mean_abs_x,
                                                     const std::vector<AwqRoundTrip>& round_trips,
                                                     const AwqOptions& options) {
  RETURN_IF_ERROR(CheckSearchInputs(linears, cols, x, n, mean_abs_x, options));
  if (round_trips.size() != linears.size()) {
    return absl::InvalidArgumentError(absl::StrCat("AWQ: ", linears.size(), " linears, ",
                                                   round_trips.size(), " round trips"));
  }
  AwqGridResult res;
  res.errors.resize(static_cast<size_t>(options.grid));
  int best = 0;
  Decoded decoded(linears.size());
  std::vector<float> ws;
  for (int k = 0; k < options.grid; ++k) {
    const std::vector<float> s = AwqScales(mean_abs_x, static_cast<double>(k) / options.grid);
    for (size_t l = 0; l < linears.size(); ++l) {
      const AwqLinear& lin = linears[l];
      ws.resize(static_cast<size_t>(lin.rows * cols));
      for (int64_t r = 0; r < lin.rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) ws[r * cols + c] = lin.w[r * cols + c] * s[c];
      }
      decoded[l].resize(ws.size());
      absl::Status st = round_trips[l](ws.data(), lin.rows, cols, decoded[l].data());
      if (!st.ok()) return Annotate(st, absl::StrCat("AWQ linear ", l));
    }
    res.errors[k] = OutputError(linears, cols, x, n, s, decoded, options.threads);
    if (res.errors[k] < res.errors[best]) best = k;
  }
  res.alpha = static_cast<float>(static_cast<double>(best) / options.grid);
  res.scales = AwqScales(mean_abs_x, static_cast<double>(best) / options.grid);
  res.error_before = res.errors[0];
  res.error_after = res.errors[best];
  return res;
}

}  // namespace slimpack::quant
