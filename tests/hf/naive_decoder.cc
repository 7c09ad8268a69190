// Loops only: no shared code with the graph builder, so a mistake in one is
// not repeated in the other.
#include "tests/hf/naive_decoder.h"

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <limits>

namespace slimpack::hf::testing {
namespace {

using Mat = std::vector<double>;

Mat ToDouble(const ir::Tensor& t) {
  const uint64_t n = *t.NumElements();
  Mat out(n);
  for (uint64_t i = 0; i < n; ++i) {
    if (t.dtype == ir::DType::kF32) {
      float f;
      std::memcpy(&f, t.data.data() + 4 * i, 4);
      out[i] = f;
    } else if (t.dtype == ir::DType::kBF16) {
      uint16_t h;
      std::memcpy(&h, t.data.data() + 2 * i, 2);
      uint32_t bits = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      out[i] = f;
    } else {
      std::abort();  // test fixture error
    }
  }
  return out;
}

struct Weights {
  const std::map<std::string, ir::Tensor>& w;
  Mat Get(const std::string& n) const {
    auto it = w.find(n);
    if (it == w.end()) std::abort();
    return ToDouble(it->second);
  }
  bool Has(const std::string& n) const { return w.count(n) > 0; }
};

// y[t, o] = sum_i x[t, i] * W[o, i] + b[o]
Mat Linear(const Mat& x, int64_t rows, int64_t in, const Mat& w, int64_t out, const Mat* b) {
  Mat y(rows * out);
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t o = 0; o < out; ++o) {
      double s = b ? (*b)[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) s += x[t * in + i] * w[o * in + i];
      y[t * out + o] = s;
    }
  }
  return y;
}

Mat RmsNorm(const Mat& x, int64_t rows, int64_t h, const Mat& w, double eps) {
  Mat y(x.size());
  for (int64_t t = 0; t < rows; ++t) {
    double ms = 0;
    for (int64_t i = 0; i < h; ++i) ms += x[t * h + i] * x[t * h + i];
    const double r = 1.0 / std::sqrt(ms / h + eps);
    for (int64_t i = 0; i < h; ++i) y[t * h + i] = w[i] * x[t * h + i] * r;
  }
  return y;
}

// In place on one head vector v[D] at position pos (rotate-half convention).
void Rope(double* v, int64_t d, int64_t pos, double theta) {
  std::vector<double> out(d);
  for (int64_t i = 0; i < d; ++i) {
    const int64_t j = i % (d / 2);
    const double inv = 1.0 / std::pow(theta, static_cast<double>(2 * j) / d);
    const double angle = pos * inv;
    const double rotated = i < d / 2 ? -v[i + d / 2] : v[i - d / 2];
    out[i] = v[i] * std::cos(angle) + rotated * std::sin(angle);
  }
  std::memcpy(v, out.data(), d * sizeof(double));
}

}  // namespace

std::vector<double> NaiveDecoderLogits(const ir::ArchitectureInfo& a,
                                       const std::map<std::string, ir::Tensor>& weights,
                                       const std::vector<int64_t>& ids, int64_t batch,
                                       int64_t seq) {
  Weights w{weights};
  const int64_t h = a.hidden_size, nh = a.num_heads, nkv = a.num_kv_heads, d = a.head_dim,
                v = a.vocab_size, inter = a.intermediate_size, rows = batch * seq;
  const Mat emb = w.Get("model.embed_tokens.weight");
  Mat x(rows * h);
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t i = 0; i < h; ++i) x[t * h + i] = emb[ids[t] * h + i];
  }
  for (int64_t l = 0; l < a.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const Mat hn = RmsNorm(x, rows, h, w.Get(p + "input_layernorm.weight"), a.norm_eps);
    auto proj = [&](const std::string& m, int64_t out) {
      const bool has_b = w.Has(p + "self_attn." + m + ".bias");
      Mat b = has_b ? w.Get(p + "self_attn." + m + ".bias") : Mat();
      return Linear(hn, rows, h, w.Get(p + "self_attn." + m + ".weight"), out,
                    has_b ? &b : nullptr);
    };
    Mat q = proj("q_proj", nh * d), k = proj("k_proj", nkv * d), vv = proj("v_proj", nkv * d);
    for (int64_t t = 0; t < rows; ++t) {
      for (int64_t hd = 0; hd < nh; ++hd) Rope(&q[(t * nh + hd) * d], d, t % seq, a.rope_theta);
      for (int64_t hd = 0; hd < nkv; ++hd) Rope(&k[(t * nkv + hd) * d], d, t % seq, a.rope_theta);
    }
    Mat attn(rows * nh * d, 0.0);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t hd = 0; hd < nh; ++hd) {
        const int64_t kvh = hd / (nh / nkv);
        for (int64_t i = 0; i < seq; ++i) {
          std::vector<double> s(i + 1);
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j <= i; ++j) {
            double dot = 0;
            for (int64_t e = 0; e < d; ++e) {
              dot += q[((b * seq + i) * nh + hd) * d + e] * k[((b * seq + j) * nkv + kvh) * d + e];
            }
            s[j] = dot / std::sqrt(static_cast<double>(d));
            mx = std::max(mx, s[j]);
          }
          double z = 0;
          for (double& e : s) z += (e = std::exp(e - mx));
          for (int64_t j = 0; j <= i; ++j) {
            for (int64_t e = 0; e < d; ++e) {
              attn[((b * seq + i) * nh + hd) * d + e] +=
                  s[j] / z * vv[((b * seq + j) * nkv + kvh) * d + e];
            }
          }
        }
      }
    }
    const Mat o = Linear(attn, rows, nh * d, w.Get(p + "self_attn.o_proj.weight"), h, nullptr);
    for (int64_t i = 0; i < rows * h; ++i) x[i] += o[i];
    const Mat hn2 = RmsNorm(x, rows, h, w.Get(p + "post_attention_layernorm.weight"), a.norm_eps);
    const Mat g = Linear(hn2, rows, h, w.Get(p + "mlp.gate_proj.weight"), inter, nullptr);
    const Mat u = Linear(hn2, rows, h, w.Get(p + "mlp.up_proj.weight"), inter, nullptr);
    Mat act(rows * inter);
    for (int64_t i = 0; i < rows * inter; ++i) act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    const Mat dn = Linear(act, rows, inter, w.Get(p + "mlp.down_proj.weight"), h, nullptr);
    for (int64_t i = 0; i < rows * h; ++i) x[i] += dn[i];
  }
  const Mat xn = RmsNorm(x, rows, h, w.Get("model.norm.weight"), a.norm_eps);
  const Mat head = w.Has("lm_head.weight") ? w.Get("lm_head.weight") : emb;
  return Linear(xn, rows, h, head, v, nullptr);
}

}  // namespace slimpack::hf::testing
