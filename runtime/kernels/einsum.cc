// Einsum (opset 12): numpy's einsum over any number of operands. Implicit
// and explicit outputs, repeated labels within an operand (diagonals),
// `...` broadcasting, size-1 broadcasting of any label (as numpy does).
//
// Every operand is a strided view: a label's stride is the sum of the
// strides of the axes carrying it (a diagonal without a copy), 0 where a
// size-1 axis broadcasts. Two f32 operands go through the GEMM: the labels
// split into batch (both operands and the output), M (first operand and
// output), N (second and output) and K (both, summed); an operand already
// laid out as [batch, M, K] / [batch, K, M] (or [batch, K, N] / [batch,
// N, K]) is used in place with the matching transpose flag, which covers
// attention as PyTorch exports it (`bhqd,bhkd->bhqk`, `bhqk,bhkd->bhqd`).
// Everything else (other dtypes, one operand) is a direct sum over the
// labels, and three or more operands are contracted left to right, each
// intermediate keeping only the labels still needed.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/gemm.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/wrap.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::runtime::kernels {
namespace {

using ir::DType;

constexpr int kLetters = 52;  // a-z are labels 0-25, A-Z 26-51

// One term of the equation: a label per letter, and where `...` stands
// (index into `letters`, -1 if absent).
struct Term {
  std::vector<int> letters;
  int ellipsis = -1;
};

// Labels are letters (0-51) and the broadcast dims of `...` (52 + j).
struct Spec {
  std::vector<std::vector<int>> inputs;  // one label per axis
  std::vector<int> output;
  int num_labels = kLetters;
};

int LetterLabel(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// ASCII order of a letter label (numpy's implicit output order: A-Z, a-z).
int AsciiOf(int label) { return label < 26 ? 'a' + label : 'A' + (label - 26); }

absl::StatusOr<Term> ParseTerm(const std::string& text, const std::string& equation) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '.') {
      if (term.ellipsis >= 0 || text.compare(i, 3, "...") != 0) {
        return absl::InvalidArgumentError("equation '" + equation + "': term '" + text +
                                          "' has a '.' that is not one '...'");
      }
      term.ellipsis = static_cast<int>(term.letters.size());
      i += 2;
      continue;
    }
    const int label = LetterLabel(text[i]);
    if (label < 0) {
      return absl::InvalidArgumentError("equation '" + equation + "': '" +
                                        std::string(1, text[i]) + "' is not a letter label");
    }
    term.letters.push_back(label);
  }
  return term;
}

absl::StatusOr<Spec> ParseEquation(std::string equation, const std::vector<const RtTensor*>& ins) {
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> texts;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    texts.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (texts.size() != ins.size()) {
    return absl::InvalidArgumentError("equation '" + equation + "' has " +
                                      std::to_string(texts.size()) + " input term(s) for " +
                                      std::to_string(ins.size()) + " input(s)");
  }
  // `...` stands for the same broadcast dims in every term, right-aligned.
  std::vector<Term> terms;
  int ellipsis_rank = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSIGN_OR_RETURN(Term t, ParseTerm(texts[i], equation));
    const int rank = static_cast<int>(ins[i]->rank());
    const int letters = static_cast<int>(t.letters.size());
    if (t.ellipsis < 0 ? rank != letters : rank < letters) {
      return absl::InvalidArgumentError("equation '" + equation + "': term '" + texts[i] +
                                        "' does not fit input " + std::to_string(i) + " " +
                                        ins[i]->DebugString());
    }
    if (t.ellipsis >= 0) ellipsis_rank = std::max(ellipsis_rank, rank - letters);
    terms.push_back(std::move(t));
  }
  Spec spec;
  spec.num_labels = kLetters + ellipsis_rank;
  std::vector<int> count(spec.num_labels, 0);
  bool any_ellipsis = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    std::vector<int> labels;
    for (int j = 0; j <= static_cast<int>(t.letters.size()); ++j) {
      if (j == t.ellipsis) {
        any_ellipsis = true;
        const int e = static_cast<int>(ins[i]->rank() - t.letters.size());
        for (int d = 0; d < e; ++d) labels.push_back(kLetters + ellipsis_rank - e + d);
      }
      if (j < static_cast<int>(t.letters.size())) labels.push_back(t.letters[j]);
    }
    for (int l : labels) ++count[l];
    spec.inputs.push_back(std::move(labels));
  }
  if (arrow == std::string::npos) {
    // Implicit: the broadcast dims, then the letters used once, in ASCII order.
    for (int d = 0; d < ellipsis_rank; ++d) spec.output.push_back(kLetters + d);
    std::vector<int> once;
    for (int l = 0; l < kLetters; ++l) {
      if (count[l] == 1) once.push_back(l);
    }
    std::sort(once.begin(), once.end(), [](int a, int b) { return AsciiOf(a) < AsciiOf(b); });
    spec.output.insert(spec.output.end(), once.begin(), once.end());
    return spec;
  }
  ASSIGN_OR_RETURN(Term out, ParseTerm(equation.substr(arrow + 2), equation));
  std::vector<bool> used(spec.num_labels, false);
  for (int j = 0; j <= static_cast<int>(out.letters.size()); ++j) {
    if (j == out.ellipsis) {
      if (!any_ellipsis) {
        return absl::InvalidArgumentError("equation '" + equation +
                                          "': the output has '...' but no input does");
      }
      for (int d = 0; d < ellipsis_rank; ++d) spec.output.push_back(kLetters + d);
    }
    if (j == static_cast<int>(out.letters.size())) break;
    const int l = out.letters[j];
    if (count[l] == 0 || used[l]) {
      return absl::InvalidArgumentError(
          "equation '" + equation + "': output label '" + std::string(1, char(AsciiOf(l))) +
          (count[l] == 0 ? "' is in no input" : "' is repeated"));
    }
    used[l] = true;
    spec.output.push_back(l);
  }
  // Broadcast dims left out of an explicit output are summed, as in numpy.
  return spec;
}

// An operand seen through its labels: stride[l] (elements) for every label
// it carries, 0 for a broadcast size-1 axis or an absent label.
template <typename T>
struct View {
  const T* data = nullptr;
  std::vector<int64_t> stride;
  std::vector<bool> has;
};

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

template <typename T>
View<T> MakeView(const T* data, const std::vector<int>& labels, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& size, int num_labels) {
  View<T> v;
  v.data = data;
  v.stride.assign(num_labels, 0);
  v.has.assign(num_labels, false);
  const std::vector<int64_t> s = ContiguousStrides(dims);
  for (size_t a = 0; a < labels.size(); ++a) {
    v.has[labels[a]] = true;
    if (dims[a] == size[labels[a]]) v.stride[labels[a]] += s[a];  // else a broadcast 1
  }
  return v;
}

template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;

// out[o] = sum over the labels not in `out_labels` of the product of the
// operands, `out` laid out row-major in `out_labels` order. Each output
// element is one independent task chunk, so threads never change bits.
template <typename T>
absl::Status Contract(ThreadPool* pool, const std::vector<View<T>>& ops,
                      const std::vector<int>& out_labels, const std::vector<int64_t>& size,
                      int num_labels, T* out) {
  std::vector<bool> in_out(num_labels, false);
  for (int l : out_labels) in_out[l] = true;
  std::vector<int> sum_labels;
  for (int l = 0; l < num_labels; ++l) {
    bool used = false;
    for (const auto& op : ops) used = used || op.has[l];
    if (used && !in_out[l]) sum_labels.push_back(l);
  }
  int64_t n_out = 1, n_sum = 1;
  for (int l : out_labels) n_out *= size[l];  // the output was allocated: no overflow
  for (int l : sum_labels) {
    auto p = CheckedMulInt64(n_sum, size[l]);
    if (!p) return absl::InvalidArgumentError("Einsum sums over more than 2^63 terms");
    n_sum = *p;
  }
  const size_t n_ops = ops.size();
  const size_t n_o = out_labels.size(), n_s = sum_labels.size();
  // Strides per operand over the output labels and the summed labels.
  std::vector<int64_t> os(n_ops * n_o), ss(n_ops * n_s);
  for (size_t i = 0; i < n_ops; ++i) {
    for (size_t j = 0; j < n_o; ++j) os[i * n_o + j] = ops[i].stride[out_labels[j]];
    for (size_t j = 0; j < n_s; ++j) ss[i * n_s + j] = ops[i].stride[sum_labels[j]];
  }
  constexpr int64_t kChunk = 256;
  const int64_t chunks = (n_out + kChunk - 1) / kChunk;
  ParallelFor(pool, chunks, [&](int64_t c) {
    std::vector<int64_t> oidx(n_o), sidx(n_s), base(n_ops), off(n_ops);
    const int64_t begin = c * kChunk, end = std::min(n_out, begin + kChunk);
    for (int64_t o = begin; o < end; ++o) {
      int64_t rest = o;
      for (size_t j = n_o; j-- > 0;) {
        oidx[j] = rest % size[out_labels[j]];
        rest /= size[out_labels[j]];
      }
      for (size_t i = 0; i < n_ops; ++i) {
        base[i] = 0;
        for (size_t j = 0; j < n_o; ++j) base[i] += oidx[j] * os[i * n_o + j];
        off[i] = base[i];
      }
      std::fill(sidx.begin(), sidx.end(), 0);
      Acc<T> acc = Acc<T>(0);
      for (int64_t s = 0; s < n_sum; ++s) {
        Acc<T> prod = static_cast<Acc<T>>(ops[0].data[off[0]]);
        for (size_t i = 1; i < n_ops; ++i) {
          prod = WrapMul(prod, static_cast<Acc<T>>(ops[i].data[off[i]]));
        }
        acc = WrapAdd(acc, prod);
        for (size_t j = n_s; j-- > 0;) {  // odometer over the summed labels
          for (size_t i = 0; i < n_ops; ++i) off[i] += ss[i * n_s + j];
          if (++sidx[j] < size[sum_labels[j]]) break;
          for (size_t i = 0; i < n_ops; ++i) off[i] -= ss[i * n_s + j] * sidx[j];
          sidx[j] = 0;
        }
      }
      out[o] = static_cast<T>(acc);
    }
  });
  return absl::OkStatus();
}

// Whether `v` is exactly a contiguous row-major array in `order` (labels
// of size 1 may have any stride).
template <typename T>
bool IsContiguous(const View<T>& v, const std::vector<int>& order,
                  const std::vector<int64_t>& size) {
  int64_t expect = 1;
  for (size_t j = order.size(); j-- > 0;) {
    const int l = order[j];
    if (size[l] != 1 && v.stride[l] != expect) return false;
    expect *= size[l];
  }
  return true;
}

std::vector<int> Concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<int64_t> SizesOf(const std::vector<int>& labels, const std::vector<int64_t>& size) {
  std::vector<int64_t> dims;
  for (int l : labels) dims.push_back(size[l]);
  return dims;
}

int64_t Product(const std::vector<int>& labels, const std::vector<int64_t>& size) {
  int64_t p = 1;
  for (int l : labels) p *= size[l];
  return p;
}

// An operand laid out for the GEMM: in place when it already is
// [batch, outer, k] (or [batch, k, outer], transposed), else copied into
// [batch, outer, k] (labels the operand has but the order lacks are summed
// on the way).
struct GemmOperand {
  const float* data = nullptr;
  bool transposed = false;
  RtTensor copy;
};

absl::StatusOr<GemmOperand> LayOut(KernelContext& ctx, const View<float>& v,
                                   const std::vector<int>& batch, const std::vector<int>& outer,
                                   const std::vector<int>& k, const std::vector<int64_t>& size,
                                   int num_labels) {
  GemmOperand g;
  bool extra = false;  // labels to sum out first
  for (int l = 0; l < num_labels; ++l) {
    const bool listed = std::count(batch.begin(), batch.end(), l) ||
                        std::count(outer.begin(), outer.end(), l) ||
                        std::count(k.begin(), k.end(), l);
    extra = extra || (v.has[l] && !listed);
  }
  const std::vector<int> straight = Concat(Concat(batch, outer), k);
  if (!extra && IsContiguous(v, straight, size)) {
    g.data = v.data;
    return g;
  }
  if (!extra && IsContiguous(v, Concat(Concat(batch, k), outer), size)) {
    g.data = v.data;
    g.transposed = true;
    return g;
  }
  ASSIGN_OR_RETURN(g.copy, ctx.AllocateUninitialized(DType::kF32, SizesOf(straight, size)));
  RETURN_IF_ERROR(Contract<float>(ctx.pool(), {v}, straight, size, num_labels,
                                  g.copy.mutable_data<float>()));
  g.data = g.copy.data<float>();
  return g;
}

// Two f32 operands through the GEMM, into `out` (row-major in
// `out_labels`). Labels of only one operand and not the output are summed
// while laying that operand out.
absl::Status ContractGemm(KernelContext& ctx, const View<float>& a, const View<float>& b,
                          const std::vector<int>& out_labels, const std::vector<int64_t>& size,
                          int num_labels, float* out) {
  std::vector<bool> in_out(num_labels, false);
  for (int l : out_labels) in_out[l] = true;
  std::vector<int> batch, m, n, k;
  for (int l : out_labels) {
    if (a.has[l] && b.has[l]) batch.push_back(l);
    else if (a.has[l]) m.push_back(l);
    else if (b.has[l]) n.push_back(l);
  }
  for (int l = 0; l < num_labels; ++l) {
    if (a.has[l] && b.has[l] && !in_out[l]) k.push_back(l);
  }
  const int64_t nb = Product(batch, size), nm = Product(m, size), nn = Product(n, size),
                nk = Product(k, size);
  // Below this many multiply-adds per matrix a BLAS call costs more than
  // it saves (an elementwise 'ij,ij->ij' would be one call per element).
  constexpr double kMinGemmWork = 256;
  if (double(nm) * double(nn) * double(nk) < kMinGemmWork) {
    return Contract<float>(ctx.pool(), {a, b}, out_labels, size, num_labels, out);
  }
  ASSIGN_OR_RETURN(GemmOperand ga, LayOut(ctx, a, batch, m, k, size, num_labels));
  ASSIGN_OR_RETURN(GemmOperand gb, LayOut(ctx, b, batch, n, k, size, num_labels));
  // B laid out [batch, N, K] is op(B) = B^T; as [batch, K, N] it is B.
  const bool trans_b = !gb.transposed;
  const std::vector<int> gemm_order = Concat(Concat(batch, m), n);
  const bool direct = gemm_order == out_labels;
  RtTensor scratch;
  float* c = out;
  if (!direct) {
    ASSIGN_OR_RETURN(scratch, ctx.AllocateUninitialized(DType::kF32, SizesOf(gemm_order, size)));
    c = scratch.mutable_data<float>();
  }
  const int64_t lda = ga.transposed ? nm : nk, ldb = trans_b ? nk : nn;
  if (nb == 1) {
    RETURN_IF_ERROR(Sgemm(ga.transposed, trans_b, nm, nn, nk, 1.0f, ga.data, lda, gb.data, ldb,
                          0.0f, c, nn, ctx.pool()));
  } else {
    std::vector<absl::Status> statuses(nb);
    ParallelFor(ctx.pool(), nb, [&](int64_t i) {
      statuses[i] = Sgemm(ga.transposed, trans_b, nm, nn, nk, 1.0f, ga.data + i * nm * nk, lda,
                          gb.data + i * nk * nn, ldb, 0.0f, c + i * nm * nn, nn, nullptr);
    });
    for (const auto& s : statuses) RETURN_IF_ERROR(s);
  }
  if (!direct) {
    const View<float> cv = MakeView<float>(c, gemm_order, SizesOf(gemm_order, size), size,
                                           num_labels);
    RETURN_IF_ERROR(Contract<float>(ctx.pool(), {cv}, out_labels, size, num_labels, out));
  }
  return absl::OkStatus();
}

// Contracts views `ops` into `out_labels`, choosing the GEMM for two f32
// operands with no empty label.
template <typename T>
absl::Status ContractAny(KernelContext& ctx, const std::vector<View<T>>& ops,
                         const std::vector<int>& out_labels, const std::vector<int64_t>& size,
                         int num_labels, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    const bool empty = std::count(size.begin(), size.end(), 0) > 0;
    if (ops.size() == 2 && !empty) {
      return ContractGemm(ctx, ops[0], ops[1], out_labels, size, num_labels, out);
    }
  }
  return Contract<T>(ctx.pool(), ops, out_labels, size, num_labels, out);
}

template <typename T>
absl::Status EinsumTyped(KernelContext& ctx, const Spec& spec,
                         const std::vector<const RtTensor*>& ins,
                         const std::vector<int64_t>& size) {
  const int nl = spec.num_labels;
  std::vector<View<T>> views;
  for (size_t i = 0; i < ins.size(); ++i) {
    views.push_back(MakeView<T>(ins[i]->data<T>(), spec.inputs[i], ins[i]->dims(), size, nl));
  }
  // Left to right: each intermediate keeps the labels that the output or a
  // later operand still needs, in label order.
  std::vector<RtTensor> keep;
  while (views.size() > 2) {
    std::vector<bool> needed(nl, false);
    for (int l : spec.output) needed[l] = true;
    for (size_t i = 2; i < views.size(); ++i) {
      for (int l = 0; l < nl; ++l) needed[l] = needed[l] || views[i].has[l];
    }
    std::vector<int> labels;
    for (int l = 0; l < nl; ++l) {
      if (needed[l] && (views[0].has[l] || views[1].has[l])) labels.push_back(l);
    }
    ASSIGN_OR_RETURN(RtTensor t, ctx.AllocateUninitialized(DTypeOf<T>(), SizesOf(labels, size)));
    RETURN_IF_ERROR(ContractAny<T>(ctx, {views[0], views[1]}, labels, size, nl,
                                   t.mutable_data<T>()));
    View<T> merged = MakeView<T>(t.data<T>(), labels, SizesOf(labels, size), size, nl);
    keep.push_back(std::move(t));
    views.erase(views.begin(), views.begin() + 2);
    views.insert(views.begin(), std::move(merged));
  }
  ASSIGN_OR_RETURN(RtTensor out,
                   ctx.AllocateUninitialized(DTypeOf<T>(), SizesOf(spec.output, size)));
  RETURN_IF_ERROR(ContractAny<T>(ctx, views, spec.output, size, nl, out.mutable_data<T>()));
  ctx.SetOutput(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace

absl::Status Einsum(KernelContext& ctx) {
  ASSIGN_OR_RETURN(std::string equation, ctx.StringAttr("equation", ""));
  if (ctx.num_inputs() == 0) return absl::InvalidArgumentError("Einsum needs at least one input");
  std::vector<const RtTensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(const RtTensor* t, ctx.RequiredInput(i));
    if (!ins.empty() && t->dtype() != ins[0]->dtype()) {
      return absl::InvalidArgumentError("Einsum inputs differ in dtype: " +
                                        ins[0]->DebugString() + " and " + t->DebugString());
    }
    ins.push_back(t);
  }
  ASSIGN_OR_RETURN(Spec spec, ParseEquation(equation, ins));
  // A label's size: equal everywhere it appears, or 1 where it broadcasts;
  // repeated within one operand (a diagonal) it must match exactly.
  std::vector<int64_t> size(spec.num_labels, -1);
  for (size_t i = 0; i < ins.size(); ++i) {
    std::vector<int64_t> here(spec.num_labels, -1);
    for (size_t a = 0; a < spec.inputs[i].size(); ++a) {
      const int l = spec.inputs[i][a];
      const int64_t d = ins[i]->dim(a);
      if (here[l] >= 0 && here[l] != d) {
        return absl::InvalidArgumentError("Einsum '" + equation + "': input " +
                                          std::to_string(i) + " " + ins[i]->DebugString() +
                                          " repeats a label over axes of different sizes");
      }
      here[l] = d;
      if (size[l] < 0 || size[l] == 1) {
        size[l] = d;
      } else if (d != 1 && d != size[l]) {
        return absl::InvalidArgumentError(
            "Einsum '" + equation + "': a label has sizes " + std::to_string(size[l]) +
            " and " + std::to_string(d) + " (input " + std::to_string(i) + " " +
            ins[i]->DebugString() + "), which do not broadcast");
      }
    }
  }
  for (int64_t& s : size) {
    if (s < 0) s = 1;  // a label no operand uses
  }
  switch (ins[0]->dtype()) {
    case DType::kF32: return EinsumTyped<float>(ctx, spec, ins, size);
    case DType::kF64: return EinsumTyped<double>(ctx, spec, ins, size);
    case DType::kI64: return EinsumTyped<int64_t>(ctx, spec, ins, size);
    case DType::kI32: return EinsumTyped<int32_t>(ctx, spec, ins, size);
    default: return UnsupportedDType(ctx, ins[0]->dtype(), "f32, f64, i64, i32");
  }
}

}  // namespace slimpack::runtime::kernels
