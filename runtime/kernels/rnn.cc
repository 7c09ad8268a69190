// LSTM and GRU (forward, reverse, bidirectional; sequence_lens; layout 0/1;
// peepholes, clip and input_forget for LSTM; linear_before_reset for GRU).
// The input projection of all time steps is one GEMM per direction.
#include <algorithm>
#include <cmath>
#include <functional>

#include "runtime/gemm.h"
#include "runtime/kernels/kernels.h"
#include "support/status_macros.h"
#include "support/portable_math.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
  float operator()(float x) const {
    if (name == "Sigmoid") {
      return x >= 0 ? 1.0f / (1.0f + pmath::Exp(-x)) : pmath::Exp(x) / (1.0f + pmath::Exp(x));
    }
    if (name == "Tanh") return pmath::Tanh(x);
    if (name == "Relu") return std::max(0.0f, x);
    if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0f, 1.0f);
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    return x;  // unreachable: names are checked when read
  }
};

struct RnnConfig {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse_only = false;
  int64_t layout = 0;
  float clip = 0;  // 0: no clip
  std::vector<Activation> acts;  // per direction: `per_dir` functions
  std::vector<int64_t> lens;     // per batch entry
};

absl::StatusOr<RnnConfig> ReadConfig(KernelContext& ctx, int64_t gates,
                                     const std::vector<std::string>& default_acts,
                                     RtTensor* x_seq_major) {
  RnnConfig c;
  ASSIGN_OR_RETURN(const RtTensor* x, ctx.RequiredInput(0));
  ASSIGN_OR_RETURN(const RtTensor* w, ctx.RequiredInput(1));
  ASSIGN_OR_RETURN(const RtTensor* r, ctx.RequiredInput(2));
  if (x->dtype() != DType::kF32) return UnsupportedDType(ctx, x->dtype(), "f32");
  for (size_t i : {1, 2, 3, 5, 6, 7}) RETURN_IF_ERROR(ctx.ExpectDType(i, DType::kF32));
  ASSIGN_OR_RETURN(std::string direction, ctx.StringAttr("direction", "forward"));
  ASSIGN_OR_RETURN(c.hidden, ctx.IntAttr("hidden_size", 0));
  ASSIGN_OR_RETURN(c.layout, ctx.IntAttr("layout", 0));
  ASSIGN_OR_RETURN(c.clip, ctx.FloatAttr("clip", 0.0f));
  if (direction == "bidirectional") {
    c.dirs = 2;
  } else if (direction == "reverse") {
    c.reverse_only = true;
  } else if (direction != "forward") {
    return absl::InvalidArgumentError("direction '" + direction +
                                      "' is not forward, reverse or bidirectional");
  }
  if (x->rank() != 3 || w->rank() != 3 || r->rank() != 3) {
    return absl::InvalidArgumentError("X, W and R must be 3-d, got " + x->DebugString() +
                                      ", " + w->DebugString() + ", " + r->DebugString());
  }
  c.seq = c.layout ? x->dim(1) : x->dim(0);
  c.batch = c.layout ? x->dim(0) : x->dim(1);
  c.input = x->dim(2);
  if (c.hidden <= 0) c.hidden = r->dim(2);
  const int64_t gh = gates * c.hidden;
  if (w->dims() != std::vector<int64_t>{c.dirs, gh, c.input} ||
      r->dims() != std::vector<int64_t>{c.dirs, gh, c.hidden}) {
    return absl::InvalidArgumentError(
        "W " + w->DebugString() + " / R " + r->DebugString() + " must be [" +
        std::to_string(c.dirs) + "," + std::to_string(gh) + "," + std::to_string(c.input) +
        "] / [.., " + std::to_string(c.hidden) + "]");
  }
  *x_seq_major = *x;
  if (c.layout) {  // [batch, seq, input] -> [seq, batch, input]
    ASSIGN_OR_RETURN(*x_seq_major,
                     ctx.AllocateUninitialized(DType::kF32, {c.seq, c.batch, c.input}));
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t t = 0; t < c.seq; ++t) {
        std::copy_n(x->data<float>() + (b * c.seq + t) * c.input, c.input,
                    x_seq_major->mutable_data<float>() + (t * c.batch + b) * c.input);
      }
    }
  }
  c.lens.assign(c.batch, c.seq);
  if (const RtTensor* sl = ctx.input(4)) {
    ASSIGN_OR_RETURN(c.lens, ReadInts(*sl, "sequence_lens"));
    if (static_cast<int64_t>(c.lens.size()) != c.batch) {
      return absl::InvalidArgumentError("sequence_lens has " + std::to_string(c.lens.size()) +
                                        " values for batch " + std::to_string(c.batch));
    }
    for (int64_t l : c.lens) {
      if (l < 0 || l > c.seq) {
        return absl::InvalidArgumentError("sequence length " + std::to_string(l) +
                                          " is outside [0, " + std::to_string(c.seq) + "]");
      }
    }
  }
  ASSIGN_OR_RETURN(auto names, ctx.StringsAttr("activations"));
  ASSIGN_OR_RETURN(auto alphas, ctx.FloatsAttr("activation_alpha"));
  ASSIGN_OR_RETURN(auto betas, ctx.FloatsAttr("activation_beta"));
  const size_t per_dir = default_acts.size();
  if (names.empty()) {
    for (int64_t d = 0; d < c.dirs; ++d) names.insert(names.end(), default_acts.begin(), default_acts.end());
  }
  if (names.size() != per_dir * static_cast<size_t>(c.dirs)) {
    return absl::InvalidArgumentError("activations has " + std::to_string(names.size()) +
                                      " names, expected " + std::to_string(per_dir * c.dirs));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    Activation a;
    a.name = names[i];
    if (a.name == "HardSigmoid") {
      a.alpha = i < alphas.size() ? alphas[i] : 0.2f;
      a.beta = i < betas.size() ? betas[i] : 0.5f;
    } else if (a.name == "LeakyRelu") {
      a.alpha = i < alphas.size() ? alphas[i] : 0.01f;
    } else if (a.name != "Sigmoid" && a.name != "Tanh" && a.name != "Relu") {
      return absl::UnimplementedError("activation '" + a.name +
                                      "' is not supported; supported: Sigmoid, Tanh, Relu, "
                                      "HardSigmoid, LeakyRelu");
    }
    c.acts.push_back(a);
  }
  return c;
}

// Reads optional per-direction initial state [dirs, batch, hidden] (or
// [batch, dirs, hidden] for layout 1) into dir-major order.
absl::StatusOr<std::vector<float>> InitialState(KernelContext& ctx, size_t input,
                                                const RnnConfig& c) {
  std::vector<float> s(c.dirs * c.batch * c.hidden, 0.0f);
  const RtTensor* t = ctx.input(input);
  if (t == nullptr) return s;
  if (t->num_elements() != static_cast<int64_t>(s.size())) {
    return absl::InvalidArgumentError("initial state " + t->DebugString() + " needs " +
                                      std::to_string(s.size()) + " elements");
  }
  for (int64_t d = 0; d < c.dirs; ++d) {
    for (int64_t b = 0; b < c.batch; ++b) {
      const int64_t src = c.layout ? (b * c.dirs + d) : (d * c.batch + b);
      std::copy_n(t->data<float>() + src * c.hidden, c.hidden,
                  s.data() + (d * c.batch + b) * c.hidden);
    }
  }
  return s;
}

// Writes Y (all steps) and a final state from dir-major buffers.
absl::Status WriteOutputs(KernelContext& ctx, const RnnConfig& c, const std::vector<float>& y,
                          const std::vector<std::vector<float>*>& finals) {
  const int64_t h = c.hidden;
  if (ctx.wants_output(0)) {
    std::vector<int64_t> dims = c.layout ? std::vector<int64_t>{c.batch, c.seq, c.dirs, h}
                                         : std::vector<int64_t>{c.seq, c.dirs, c.batch, h};
    ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kF32, dims));
    for (int64_t t = 0; t < c.seq; ++t) {
      for (int64_t d = 0; d < c.dirs; ++d) {
        for (int64_t b = 0; b < c.batch; ++b) {
          const int64_t dst = c.layout ? ((b * c.seq + t) * c.dirs + d) : ((t * c.dirs + d) * c.batch + b);
          std::copy_n(y.data() + ((t * c.dirs + d) * c.batch + b) * h, h,
                      out.mutable_data<float>() + dst * h);
        }
      }
    }
    ctx.SetOutput(0, std::move(out));
  }
  for (size_t i = 0; i < finals.size(); ++i) {
    if (!ctx.wants_output(i + 1)) continue;
    std::vector<int64_t> dims = c.layout ? std::vector<int64_t>{c.batch, c.dirs, h}
                                         : std::vector<int64_t>{c.dirs, c.batch, h};
    ASSIGN_OR_RETURN(RtTensor out, ctx.AllocateUninitialized(DType::kF32, dims));
    for (int64_t d = 0; d < c.dirs; ++d) {
      for (int64_t b = 0; b < c.batch; ++b) {
        const int64_t dst = c.layout ? (b * c.dirs + d) : (d * c.batch + b);
        std::copy_n(finals[i]->data() + (d * c.batch + b) * h, h,
                    out.mutable_data<float>() + dst * h);
      }
    }
    ctx.SetOutput(i + 1, std::move(out));
  }
  return absl::OkStatus();
}

// Gate pre-activations from the input for every step: X[seq*batch, I] x
// W_d^T, plus both biases.
absl::StatusOr<std::vector<float>> ProjectInput(KernelContext& ctx, const RnnConfig& c,
                                                const RtTensor& x, int64_t d, int64_t gates) {
  const int64_t gh = gates * c.hidden;
  std::vector<float> xw(c.seq * c.batch * gh);
  const RtTensor* w = ctx.input(1);
  RETURN_IF_ERROR(Sgemm(false, true, c.seq * c.batch, gh, c.input, 1.0f, x.data<float>(),
                        c.input, w->data<float>() + d * gh * c.input, c.input, 0.0f,
                        xw.data(), gh, ctx.pool()));
  if (const RtTensor* bias = ctx.input(3)) {
    if (bias->num_elements() != c.dirs * 2 * gh) {
      return absl::InvalidArgumentError("B " + bias->DebugString() + " needs " +
                                        std::to_string(c.dirs * 2 * gh) + " elements");
    }
    const float* wb = bias->data<float>() + d * 2 * gh;
    const float* rb = wb + gh;
    for (int64_t i = 0; i < c.seq * c.batch; ++i) {
      for (int64_t j = 0; j < gh; ++j) xw[i * gh + j] += wb[j] + rb[j];
    }
  }
  return xw;
}

float Clip(float v, float clip) { return clip > 0 ? std::clamp(v, -clip, clip) : v; }

}  // namespace

absl::Status LSTM(KernelContext& ctx) {
  RtTensor x;
  ASSIGN_OR_RETURN(RnnConfig c, ReadConfig(ctx, 4, {"Sigmoid", "Tanh", "Tanh"}, &x));
  ASSIGN_OR_RETURN(int64_t input_forget, ctx.IntAttr("input_forget", 0));
  const int64_t h = c.hidden, gh = 4 * h;
  ASSIGN_OR_RETURN(std::vector<float> hs, InitialState(ctx, 5, c));
  ASSIGN_OR_RETURN(std::vector<float> cs, InitialState(ctx, 6, c));
  const RtTensor* peep = ctx.input(7);
  if (peep != nullptr && peep->num_elements() != c.dirs * 3 * h) {
    return absl::InvalidArgumentError("P " + peep->DebugString() + " needs " +
                                      std::to_string(c.dirs * 3 * h) + " elements");
  }
  std::vector<float> y(c.seq * c.dirs * c.batch * h, 0.0f);
  std::vector<float> hr(c.batch * gh);
  for (int64_t d = 0; d < c.dirs; ++d) {
    const bool reverse = c.reverse_only || d == 1;
    ASSIGN_OR_RETURN(std::vector<float> xw, ProjectInput(ctx, c, x, d, 4));
    const float* rd = ctx.input(2)->data<float>() + d * gh * h;
    const float* p = peep ? peep->data<float>() + d * 3 * h : nullptr;
    const Activation& f = c.acts[d * 3], &g = c.acts[d * 3 + 1], &hact = c.acts[d * 3 + 2];
    float* hd = hs.data() + d * c.batch * h;
    float* cd = cs.data() + d * c.batch * h;
    for (int64_t s = 0; s < c.seq; ++s) {
      RETURN_IF_ERROR(Sgemm(false, true, c.batch, gh, h, 1.0f, hd, h, rd, h, 0.0f, hr.data(),
                            gh, nullptr));
      for (int64_t b = 0; b < c.batch; ++b) {
        const int64_t len = c.lens[b];
        if (s >= len) continue;  // padding steps leave state and Y alone
        const int64_t t = reverse ? len - 1 - s : s;
        const float* gx = xw.data() + (t * c.batch + b) * gh;
        const float* gr = hr.data() + b * gh;
        float* hb = hd + b * h;
        float* cb = cd + b * h;
        for (int64_t j = 0; j < h; ++j) {
          const float c_prev = cb[j];
          float i_g = gx[j] + gr[j] + (p ? p[j] * c_prev : 0.0f);
          float o_g = gx[h + j] + gr[h + j];
          float f_g = gx[2 * h + j] + gr[2 * h + j] + (p ? p[2 * h + j] * c_prev : 0.0f);
          float c_g = gx[3 * h + j] + gr[3 * h + j];
          i_g = f(Clip(i_g, c.clip));
          f_g = input_forget ? 1.0f - i_g : f(Clip(f_g, c.clip));
          c_g = g(Clip(c_g, c.clip));
          const float c_new = f_g * c_prev + i_g * c_g;
          o_g = f(Clip(o_g + (p ? p[h + j] * c_new : 0.0f), c.clip));
          cb[j] = c_new;
          hb[j] = o_g * hact(c_new);
        }
        std::copy_n(hb, h, y.data() + ((t * c.dirs + d) * c.batch + b) * h);
      }
    }
  }
  std::vector<std::vector<float>*> finals = {&hs, &cs};
  return WriteOutputs(ctx, c, y, finals);
}

absl::Status GRU(KernelContext& ctx) {
  RtTensor x;
  ASSIGN_OR_RETURN(RnnConfig c, ReadConfig(ctx, 3, {"Sigmoid", "Tanh"}, &x));
  ASSIGN_OR_RETURN(int64_t lbr, ctx.IntAttr("linear_before_reset", 0));
  const int64_t h = c.hidden, gh = 3 * h;
  ASSIGN_OR_RETURN(std::vector<float> hs, InitialState(ctx, 5, c));
  std::vector<float> y(c.seq * c.dirs * c.batch * h, 0.0f);
  std::vector<float> hr(c.batch * gh), rh(c.batch * h), rh_r(c.batch * h);
  const RtTensor* bias = ctx.input(3);
  for (int64_t d = 0; d < c.dirs; ++d) {
    const bool reverse = c.reverse_only || d == 1;
    // The hidden gate's recurrent bias Rbh cannot be folded into the input
    // projection (it sits inside the reset product), so project without
    // biases here and add them per step.
    std::vector<float> xw(c.seq * c.batch * gh);
    RETURN_IF_ERROR(Sgemm(false, true, c.seq * c.batch, gh, c.input, 1.0f, x.data<float>(),
                          c.input, ctx.input(1)->data<float>() + d * gh * c.input, c.input,
                          0.0f, xw.data(), gh, ctx.pool()));
    std::vector<float> wb(gh, 0.0f), rb(gh, 0.0f);
    if (bias != nullptr) {
      if (bias->num_elements() != c.dirs * 2 * gh) {
        return absl::InvalidArgumentError("B " + bias->DebugString() + " needs " +
                                          std::to_string(c.dirs * 2 * gh) + " elements");
      }
      std::copy_n(bias->data<float>() + d * 2 * gh, gh, wb.data());
      std::copy_n(bias->data<float>() + d * 2 * gh + gh, gh, rb.data());
    }
    const float* rd = ctx.input(2)->data<float>() + d * gh * h;
    const Activation& f = c.acts[d * 2], &g = c.acts[d * 2 + 1];
    float* hd = hs.data() + d * c.batch * h;
    for (int64_t s = 0; s < c.seq; ++s) {
      // z and r recurrent terms; for linear_before_reset also H x Rh^T.
      RETURN_IF_ERROR(Sgemm(false, true, c.batch, gh, h, 1.0f, hd, h, rd, h, 0.0f, hr.data(),
                            gh, nullptr));
      std::vector<float> zs(c.batch * h), rs(c.batch * h);
      for (int64_t b = 0; b < c.batch; ++b) {
        if (s >= c.lens[b]) continue;
        const int64_t t = reverse ? c.lens[b] - 1 - s : s;
        const float* gx = xw.data() + (t * c.batch + b) * gh;
        const float* gr = hr.data() + b * gh;
        for (int64_t j = 0; j < h; ++j) {
          zs[b * h + j] = f(Clip(gx[j] + gr[j] + wb[j] + rb[j], c.clip));
          rs[b * h + j] = f(Clip(gx[h + j] + gr[h + j] + wb[h + j] + rb[h + j], c.clip));
          rh[b * h + j] = rs[b * h + j] * hd[b * h + j];
        }
      }
      if (!lbr) {
        // (r . H) x Rh^T
        RETURN_IF_ERROR(Sgemm(false, true, c.batch, h, h, 1.0f, rh.data(), h, rd + 2 * h * h, h,
                              0.0f, rh_r.data(), h, nullptr));
      }
      for (int64_t b = 0; b < c.batch; ++b) {
        if (s >= c.lens[b]) continue;
        const int64_t t = reverse ? c.lens[b] - 1 - s : s;
        const float* gx = xw.data() + (t * c.batch + b) * gh;
        const float* gr = hr.data() + b * gh;
        float* hb = hd + b * h;
        for (int64_t j = 0; j < h; ++j) {
          const float rec = lbr ? rs[b * h + j] * (gr[2 * h + j] + rb[2 * h + j])
                                : rh_r[b * h + j] + rb[2 * h + j];
          const float cand = g(Clip(gx[2 * h + j] + wb[2 * h + j] + rec, c.clip));
          const float z = zs[b * h + j];
          hb[j] = (1.0f - z) * cand + z * hb[j];
        }
        std::copy_n(hb, h, y.data() + ((t * c.dirs + d) * c.batch + b) * h);
      }
    }
  }
  std::vector<std::vector<float>*> finals = {&hs};
  return WriteOutputs(ctx, c, y, finals);
}

}  // namespace slimpack::runtime::kernels
