// Quantizer throughput benchmark (figures for the README; not a test).
//   quant_bench [--gib G] [--reps R] [--gptq-n N] [--calib-rows M]
//               [--no-rtn] [--no-gptq]
// RTN: GB/s of f32 input for int8 per-channel and int4 g32 (sym; asym and
// the MSE clip search too) on G GiB of synthetic weights (peer recipe of
// bench docs: N(0, 0.02), 1 % of input columns x20), 1 and 2 threads,
// median of R runs; memcpy of the same bytes for reference; error stats of
// each scheme on the first 1024 rows.
// GPTQ: wall time of QuantizeGptq (int4 g128 sym, with and without
// act-order) on an N x N layer whose X^T X comes from M random rows
// (accumulated with OpenBLAS ssyrk, timed separately).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "quantize/numerics/error_stats.h"
#include "quantize/numerics/gptq.h"
#include "quantize/numerics/linalg.h"
#include "quantize/numerics/rtn.h"

#ifdef SLIMPACK_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
using slimpack::quant::Scheme;

double Seconds(Clock::time_point a) {
  return std::chrono::duration<double>(Clock::now() - a).count();
}

// xorshift64* -> approximately normal (Irwin-Hall of 4 uniforms).
struct Rng {
  uint64_t s;
  float Uniform() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return static_cast<float>((s * 2685821657736338717ull) >> 40) *
           (1.0f / 16777216.0f);
  }
  float Normal() {
    return (Uniform() + Uniform() + Uniform() + Uniform() - 2.0f) * 1.7320508f;
  }
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void BenchRtn(double gib, int reps) {
  const int64_t cols = 4096;
  const int64_t rows =
      static_cast<int64_t>(gib * (1ull << 30) / (cols * sizeof(float)));
  const double bytes = static_cast<double>(rows) * cols * sizeof(float);
  std::printf("RTN input: %lld x %lld f32 = %.3f GB (%.3f GiB)\n",
              static_cast<long long>(rows), static_cast<long long>(cols),
              bytes / 1e9, bytes / (1ull << 30));
  std::vector<float> w(static_cast<size_t>(rows * cols));
  {
    std::vector<uint8_t> outlier(cols, 0);
    Rng pick{12345};
    for (int64_t c = 0; c < cols; ++c) outlier[c] = pick.Uniform() < 0.01f;
    const int nt = 2;
    std::vector<std::thread> pool;
    for (int t = 0; t < nt; ++t) {
      pool.emplace_back([&, t] {
        Rng rng{0x9E3779B97F4A7C15ull * (t + 1)};
        for (int64_t r = t; r < rows; r += nt) {
          for (int64_t c = 0; c < cols; ++c) {
            float v = 0.02f * rng.Normal();
            w[r * cols + c] = outlier[c] ? 20.0f * v : v;
          }
        }
      });
    }
    for (auto& th : pool) th.join();
  }
  {
    std::vector<float> dst(w.size());
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      auto t0 = Clock::now();
      std::memcpy(dst.data(), w.data(), w.size() * sizeof(float));
      t.push_back(Seconds(t0));
    }
    std::printf("memcpy                         : %7.2f GB/s\n",
                bytes / Median(t) / 1e9);
  }
  struct Case {
    const char* name;
    Scheme scheme;
    bool clip;
  };
  const Case cases[] = {{"int8 per-channel sym", {8, 0, true}, false},
                        {"int8 per-channel asym", {8, 0, false}, false},
                        {"int4 g32 sym", {4, 32, true}, false},
                        {"int4 g32 asym", {4, 32, false}, false},
                        {"int4 g128 sym", {4, 128, true}, false},
                        {"int4 g32 asym mse-clip", {4, 32, false}, true}};
  const int64_t err_rows = std::min<int64_t>(rows, 1024);
  std::vector<float> deq(static_cast<size_t>(err_rows * cols));
  for (const Case& c : cases) {
    for (int threads : {1, 2}) {
      slimpack::quant::RtnOptions o;
      o.threads = threads;
      o.mse_clip = c.clip;
      std::vector<double> t;
      for (int i = 0; i < reps; ++i) {
        auto t0 = Clock::now();
        auto m = slimpack::quant::QuantizeRtn(w.data(), rows, cols, c.scheme,
                                              o);
        t.push_back(Seconds(t0));
        if (!m.ok()) {
          std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
          std::exit(1);
        }
      }
      std::printf("%-22s %d thread%s: %7.2f GB/s  (median %.3f s)\n", c.name,
                  threads, threads == 1 ? " " : "s", bytes / Median(t) / 1e9,
                  Median(t));
    }
    slimpack::quant::RtnOptions o;
    o.mse_clip = c.clip;
    auto m = slimpack::quant::QuantizeRtn(w.data(), err_rows, cols, c.scheme,
                                          o);
    slimpack::quant::Dequantize(*m, deq.data());
    const auto st =
        slimpack::quant::CompareArrays(w.data(), deq.data(), err_rows * cols);
    std::printf("%-22s error: rel L2 %.4f  SQNR %.2f dB  bits/weight %.3f\n",
                c.name, st.relative_l2(), st.sqnr_db(),
                8.0 * m->StorageBytes() / (err_rows * cols));
  }
  // Plain Gaussian N(0,1) 4096 x 4096 (the peer document's second table).
  const int64_t g = 4096;
  std::vector<float> gw(static_cast<size_t>(g * g)), gd(gw.size());
  Rng rng{4242};
  for (float& v : gw) v = rng.Normal();
  for (const Case& c : cases) {
    slimpack::quant::RtnOptions o;
    o.mse_clip = c.clip;
    o.threads = 2;
    auto m = slimpack::quant::QuantizeRtn(gw.data(), g, g, c.scheme, o);
    slimpack::quant::Dequantize(*m, gd.data());
    const auto st = slimpack::quant::CompareArrays(gw.data(), gd.data(), g * g);
    std::printf("%-22s N(0,1) 4096x4096: rel L2 %.4f  SQNR %.2f dB\n", c.name,
                st.relative_l2(), st.sqnr_db());
  }
}

void BenchGptq(int64_t n, int64_t calib_rows) {
  std::vector<double> xtx(static_cast<size_t>(n * n), 0.0);
  {
    const int64_t chunk = 4096;
    std::vector<float> x(static_cast<size_t>(chunk * n)), acc(n * n, 0.0f);
    Rng rng{777};
    auto t0 = Clock::now();
    for (int64_t done = 0; done < calib_rows; done += chunk) {
      const int64_t m = std::min(chunk, calib_rows - done);
      for (int64_t i = 0; i < m * n; ++i) x[i] = rng.Normal();
#ifdef SLIMPACK_HAVE_OPENBLAS
      // Upper triangle of acc += x^T x (row-major: acc is n x n).
      cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(n),
                  static_cast<int>(m), 1.0f, x.data(), static_cast<int>(n),
                  1.0f, acc.data(), static_cast<int>(n));
#else
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t i = 0; i < n; ++i) {
          const float xi = x[r * n + i];
          for (int64_t j = i; j < n; ++j) acc[i * n + j] += xi * x[r * n + j];
        }
      }
#endif
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i; j < n; ++j) {
        xtx[i * n + j] = xtx[j * n + i] = acc[i * n + j];
      }
    }
    std::printf("GPTQ calibration: X^T X of %lld x %lld random rows: %.2f s "
                "(not part of GPTQ time)\n",
                static_cast<long long>(calib_rows), static_cast<long long>(n),
                Seconds(t0));
  }
  for (int threads : {1, 2}) {
    // The factorisation alone: n^3 / 3 floating-point operations each for
    // the Cholesky and the triangular inverse (in double).
    std::vector<double> h = xtx, u(xtx.size());
    for (int64_t i = 0; i < n; ++i) h[i * n + i] += 1.0;
    auto t0 = Clock::now();
    slimpack::quant::internal::UpperCholeskyOfInverse(h.data(), n, u.data(), threads);
    const double s = Seconds(t0);
    const double flops = 2.0 * static_cast<double>(n) * n * n / 3.0;
    std::printf("GPTQ factorisation (Cholesky of H, triangular inverse), %d thread%s: "
                "%.2f s (%.1f GFLOP/s)\n", threads, threads == 1 ? "" : "s", s,
                flops / s * 1e-9);
  }
  std::vector<float> w(static_cast<size_t>(n * n));
  Rng rng{99};
  for (float& v : w) v = 0.02f * rng.Normal();
  for (bool act : {false, true}) {
    for (int threads : {1, 2}) {
      slimpack::quant::GptqOptions o;
      o.act_order = act;
      o.threads = threads;
      auto t0 = Clock::now();
      auto m = slimpack::quant::QuantizeGptq(w.data(), n, n, Scheme{4, 128, true},
                                             xtx, static_cast<uint64_t>(calib_rows), o);
      const double s = Seconds(t0);
      if (!m.ok()) {
        std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
        std::exit(1);
      }
      std::printf("GPTQ %lldx%lld int4 g128 sym%s, %d thread%s: %.2f s\n",
                  static_cast<long long>(n), static_cast<long long>(n),
                  act ? " act-order" : "", threads, threads == 1 ? "" : "s", s);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  double gib = 1.0;
  int reps = 3;
  int64_t gptq_n = 4096, calib_rows = 128 * 512;
  bool rtn = true, gptq = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--gib") gib = std::atof(next());
    else if (a == "--reps") reps = std::atoi(next());
    else if (a == "--gptq-n") gptq_n = std::atoll(next());
    else if (a == "--calib-rows") calib_rows = std::atoll(next());
    else if (a == "--no-rtn") rtn = false;
    else if (a == "--no-gptq") gptq = false;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  std::printf("AVX2 kernel: %s\n", slimpack::quant::RtnHasAvx2() ? "yes" : "no");
  if (rtn) BenchRtn(gib, reps);
  if (gptq) BenchGptq(gptq_n, calib_rows);
  return 0;
}
