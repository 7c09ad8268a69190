// Einsum: numpy's semantics (implicit and explicit outputs, diagonals,
// `...` and size-1 broadcasting, several operands) on hand-computed cases,
// and the GEMM path (attention's batched forms, in place and transposed)
// against plain loops.
#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/op_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::runtime::testing::ExpectFloats;
using ::slimpack::runtime::testing::ExpectValues;
using ::slimpack::runtime::testing::F32;
using ::slimpack::runtime::testing::I64;
using ::slimpack::runtime::testing::OpTest;
using ::slimpack::runtime::testing::Random;
using ::slimpack::runtime::testing::RunOne;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using Attr = ir::Attribute;

OpTest Einsum(const std::string& equation, std::vector<RtTensor> ins) {
  std::vector<std::pair<std::string, RtTensor>> named;
  for (size_t i = 0; i < ins.size(); ++i) named.emplace_back("in" + std::to_string(i), ins[i]);
  OpTest t{"Einsum", named, {{"equation", Attr::String(equation)}}, 1, 12};
  t.num_threads = 2;
  return t;
}

TEST(EinsumTest, MatmulTransposeAndImplicitOutput) {
  RtTensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  RtTensor b = F32({3, 2}, {1, 0, 0, 1, 1, 1});
  ExpectFloats(RunOne(Einsum("ij,jk->ik", {a, b})), {2, 2}, {4, 5, 10, 11});
  // Implicit: the labels used once, in ASCII order (ik).
  ExpectFloats(RunOne(Einsum("ij,jk", {a, b})), {2, 2}, {4, 5, 10, 11});
  ExpectFloats(RunOne(Einsum("ij->ji", {a})), {3, 2}, {1, 4, 2, 5, 3, 6});
  // Implicit outputs sort their labels, A-Z before a-z (ASCII, as numpy).
  ExpectFloats(RunOne(Einsum("ba", {a})), {3, 2}, {1, 4, 2, 5, 3, 6});
  ExpectFloats(RunOne(Einsum("Ba", {a})), {2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectFloats(RunOne(Einsum("bA", {a})), {3, 2}, {1, 4, 2, 5, 3, 6});
  ExpectFloats(RunOne(Einsum(" i j -> ", {a})), {}, {21});
  ExpectFloats(RunOne(Einsum("ij->j", {a})), {3}, {5, 7, 9});
}

TEST(EinsumTest, DiagonalsTracesAndOuterProducts) {
  RtTensor m = F32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  ExpectFloats(RunOne(Einsum("ii->i", {m})), {3}, {1, 5, 9});
  ExpectFloats(RunOne(Einsum("ii", {m})), {}, {15});
  // Batched diagonal through `...`.
  RtTensor bm = F32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  ExpectFloats(RunOne(Einsum("...ii->...i", {bm})), {2, 2}, {1, 4, 5, 8});
  ExpectFloats(RunOne(Einsum("i,j->ij", {F32({2}, {1, 2}), F32({3}, {1, 10, 100})})), {2, 3},
               {1, 10, 100, 2, 20, 200});
  ExpectFloats(RunOne(Einsum("i,i", {F32({3}, {1, 2, 3}), F32({3}, {4, 5, 6})})), {}, {32});
}

TEST(EinsumTest, EllipsisAndSizeOneBroadcastLikeNumpy) {
  // [2,1,2,2] x [3,2,2] -> [2,3,2,2]: the `...` dims broadcast.
  RtTensor a = F32({2, 1, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2});
  std::vector<float> bv(12);
  for (int i = 0; i < 12; ++i) bv[i] = static_cast<float>(i);
  RtTensor b = F32({3, 2, 2}, bv);
  std::vector<float> want;
  for (float s : {1.0f, 2.0f}) {
    for (int i = 0; i < 12; ++i) want.push_back(s * bv[i]);
  }
  ExpectFloats(RunOne(Einsum("...ij,...jk->...ik", {a, b})), {2, 3, 2, 2}, want);
  // A letter of size 1 broadcasts too; `...` left out of the output is summed.
  ExpectFloats(RunOne(Einsum("ij,jk->ik", {F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({1, 2}, {1, 2})})),
               {2, 2}, {6, 12, 15, 30});
  ExpectFloats(RunOne(Einsum("...i->i", {F32({2, 2}, {1, 2, 3, 4})})), {2}, {4, 6});
}

TEST(EinsumTest, ThreeOperandsAndOtherDtypes) {
  RtTensor a = F32({2, 2}, {1, 2, 3, 4}), b = F32({2, 2}, {0, 1, 1, 0}), c = F32({2, 1}, {1, 2});
  // (a @ b) @ c: a@b = [[2,1],[4,3]], times [1,2]^T = [4, 10].
  ExpectFloats(RunOne(Einsum("ij,jk,kl->il", {a, b, c})), {2, 1}, {4, 10});
  ExpectValues<int64_t>(RunOne(Einsum("ij,jk->ik", {I64({1, 2}, {3, -4}), I64({2, 1}, {5, 6})})),
                        {1, 1}, {-9});
  RtTensor d = RtTensor::FromVector<double>({2, 2}, {1.5, 2, 3, 4});
  ExpectValues<double>(RunOne(Einsum("ij->i", {d})), {2}, {3.5, 7});
}

// Plain loops for out[b,h,q,k] = sum_d x[b,h,q,d] * y[b,h,k,d].
std::vector<float> ScoresByLoops(const std::vector<float>& x, const std::vector<float>& y,
                                 int B, int H, int Q, int K, int D) {
  std::vector<float> out(B * H * Q * K);
  for (int bh = 0; bh < B * H; ++bh)
    for (int q = 0; q < Q; ++q)
      for (int k = 0; k < K; ++k) {
        double s = 0;
        for (int d = 0; d < D; ++d) s += double(x[(bh * Q + q) * D + d]) * y[(bh * K + k) * D + d];
        out[(bh * Q + q) * K + k] = static_cast<float>(s);
      }
  return out;
}

TEST(EinsumTest, AttentionFormsThroughTheGemmMatchLoops) {
  const int B = 2, H = 3, Q = 16, K = 12, D = 8;
  const std::vector<float> q = Random(B * H * Q * D, 1), k = Random(B * H * K * D, 2);
  // bhkd read as K^T in place (transposed GEMM operand).
  ExpectFloats(RunOne(Einsum("bhqd,bhkd->bhqk", {F32({B, H, Q, D}, q), F32({B, H, K, D}, k)})),
               {B, H, Q, K}, ScoresByLoops(q, k, B, H, Q, K, D), 1e-5f, 1e-5f);
  // bhqk,bhkd->bhqd: both operands in place, no transpose.
  const std::vector<float> p = Random(B * H * Q * K, 3), v = Random(B * H * K * D, 4);
  std::vector<float> vt(v.size());  // v as [b,h,d,k] so the loop helper applies
  for (int bh = 0; bh < B * H; ++bh)
    for (int kk = 0; kk < K; ++kk)
      for (int d = 0; d < D; ++d) vt[(bh * D + d) * K + kk] = v[(bh * K + kk) * D + d];
  ExpectFloats(RunOne(Einsum("bhqk,bhkd->bhqd", {F32({B, H, Q, K}, p), F32({B, H, K, D}, v)})),
               {B, H, Q, D}, ScoresByLoops(p, vt, B, H, Q, D, K), 1e-5f, 1e-5f);
  // Output in another order than [batch, M, N]: a permuted write-back.
  RtTensor scores_t = RunOne(Einsum("bhqd,bhkd->bhkq", {F32({B, H, Q, D}, q), F32({B, H, K, D}, k)}));
  const std::vector<float> s = ScoresByLoops(q, k, B, H, Q, K, D);
  std::vector<float> st(s.size());
  for (int bh = 0; bh < B * H; ++bh)
    for (int qq = 0; qq < Q; ++qq)
      for (int kk = 0; kk < K; ++kk) st[(bh * K + kk) * Q + qq] = s[(bh * Q + qq) * K + kk];
  ExpectFloats(scores_t, {B, H, K, Q}, st, 1e-5f, 1e-5f);
  // Two contracted labels and a copied operand: bhqd,hdm->bqm.
  const int M = 5;
  const std::vector<float> w = Random(H * D * M, 5);
  std::vector<float> want(B * Q * M, 0.0f);
  for (int b = 0; b < B; ++b)
    for (int qq = 0; qq < Q; ++qq)
      for (int m = 0; m < M; ++m) {
        double acc = 0;
        for (int h = 0; h < H; ++h)
          for (int d = 0; d < D; ++d) {
            acc += double(q[((b * H + h) * Q + qq) * D + d]) * w[(h * D + d) * M + m];
          }
        want[(b * Q + qq) * M + m] = static_cast<float>(acc);
      }
  ExpectFloats(RunOne(Einsum("bhqd,hdm->bqm", {F32({B, H, Q, D}, q), F32({H, D, M}, w)})),
               {B, Q, M}, want, 1e-5f, 1e-5f);
}

TEST(EinsumTest, EmptyLabelsGiveZerosOrEmptyOutputs) {
  RtTensor a = F32({2, 0}, {}), b = F32({0, 3}, {});
  ExpectFloats(RunOne(Einsum("ij,jk->ik", {a, b})), {2, 3}, {0, 0, 0, 0, 0, 0});
  ExpectFloats(RunOne(Einsum("ij->ji", {a})), {0, 2}, {});
}

TEST(EinsumTest, MalformedEquationsNameTheProblem) {
  RtTensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THAT(Einsum("ij,jk->ik", {a}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 input term(s) for 1")));
  EXPECT_THAT(Einsum("ijk->i", {a}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not fit input 0")));
  EXPECT_THAT(Einsum("i1->i", {a}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'1' is not a letter")));
  EXPECT_THAT(Einsum("ij->ik", {a}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'k' is in no input")));
  EXPECT_THAT(Einsum("ij->ii", {a}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'i' is repeated")));
  EXPECT_THAT(Einsum("ii->i", {a}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("axes of different sizes")));
  EXPECT_THAT(Einsum("ij,jk->ik", {a, F32({2, 2}, {1, 2, 3, 4})}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("do not broadcast")));
  EXPECT_THAT(Einsum("ij,jk->ik", {a, I64({3, 1}, {1, 2, 3})}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("differ in dtype")));
  EXPECT_THAT(Einsum("i.j->i", {a}).Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not one '...'")));
}

}  // namespace
}  // namespace slimpack::runtime
