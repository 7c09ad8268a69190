// ir/sparse: the sparse_2_4 packing round-trips bit-exactly for
// f32 / f16 / bf16 (signed zeros, groups with fewer than two nonzeros
// included), rejects tensors that break 2:4 and corrupt index nibbles, and
// MeasureSparsity counts exact zeros of floats and symmetric integers.
#include "ir/sparse.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::ir {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A [rows, cols] tensor of `dtype` with random nonzero bit patterns at two
// random positions of each group of 4 (or fewer in every 5th group).
Tensor Random2of4(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t esize = static_cast<size_t>(DTypeBits(dtype) / 8);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * cols) * esize, 0);
  for (int64_t g = 0; g < rows * cols / 4; ++g) {
    int keep[4] = {0, 1, 2, 3};
    std::shuffle(keep, keep + 4, rng);
    const int n = g % 5 == 0 ? static_cast<int>(g % 3) : 2;
    for (int k = 0; k < n; ++k) {
      uint8_t* e = bytes.data() + (static_cast<size_t>(g * 4 + keep[k])) * esize;
      for (size_t b = 0; b < esize; ++b) e[b] = static_cast<uint8_t>(rng());
      e[esize - 1] |= 0x01;  // never +-0
    }
    if (g % 7 == 0) bytes[(static_cast<size_t>(g * 4 + keep[3]) + 1) * esize - 1] = 0x80;  // -0
  }
  Tensor t;
  t.name = "w";
  t.dtype = dtype;
  t.dims = {rows, cols};
  t.data = TensorData::Owned(std::move(bytes));
  t.sparsity.pattern = SparsityPattern::k2of4;
  return t;
}

class PackRoundTripTest : public ::testing::TestWithParam<DType> {};

TEST_P(PackRoundTripTest, UnpackGivesBackTheExactBytes) {
  const Tensor dense = Random2of4(GetParam(), 6, 24, 3);
  auto packed = Pack2of4(dense);
  ASSERT_THAT(packed, IsOk());
  const uint64_t esize = static_cast<uint64_t>(DTypeBits(GetParam()) / 8);
  EXPECT_EQ(packed->values.data.size(), 6u * 12u * esize);
  EXPECT_EQ(packed->values.dims, dense.dims);
  EXPECT_EQ(packed->indices.name, "w.sparse_indices");
  EXPECT_EQ(packed->indices.dtype, DType::kU4);
  EXPECT_EQ(packed->indices.dims, (std::vector<int64_t>{6, 6}));
  EXPECT_EQ(packed->indices.data.size(), 18u);
  std::vector<uint8_t> out(dense.data.size(), 0xAB);
  ASSERT_THAT(Unpack2of4("w", GetParam(), 6, 24, packed->values.data.data(),
                         packed->values.data.size(), packed->indices.data.data(),
                         packed->indices.data.size(), out.data(), out.size()),
              IsOk());
  // -0 becomes +0 only where it was dropped; kept -0 stays (bytes compared
  // after clearing dropped negative zeros, which carry no value).
  for (size_t i = 0; i < out.size() / esize; ++i) {
    const uint8_t* a = dense.data.data() + i * esize;
    const uint8_t* b = out.data() + i * esize;
    const bool a_negzero = a[esize - 1] == 0x80 && std::all_of(a, a + esize - 1, [](uint8_t x) { return x == 0; });
    if (a_negzero && std::all_of(b, b + esize, [](uint8_t x) { return x == 0; })) continue;
    EXPECT_EQ(0, std::memcmp(a, b, esize)) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, PackRoundTripTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

TEST(Pack2of4Test, KnownNibbles) {
  // Row: group 0 keeps positions 1, 3; group 1 keeps only position 0, made
  // up with the lowest zero (1). Nibbles 0b1101 = 0xD and 0b0100 = 0x4.
  std::vector<float> w = {0, 5, 0, 6, 7, 0, 0, 0};
  Tensor t;
  t.name = "w";
  t.dtype = DType::kF32;
  t.dims = {1, 8};
  t.data = TensorData::Owned(std::vector<uint8_t>(reinterpret_cast<uint8_t*>(w.data()),
                                                  reinterpret_cast<uint8_t*>(w.data() + 8)));
  auto p = Pack2of4(t);
  ASSERT_THAT(p, IsOk());
  ASSERT_EQ(p->indices.data.size(), 1u);
  EXPECT_EQ(p->indices.data.data()[0], 0x4D);
  std::vector<float> values(4);
  std::memcpy(values.data(), p->values.data.data(), 16);
  EXPECT_EQ(values, (std::vector<float>{5, 6, 7, 0}));
}

TEST(Pack2of4Test, Errors) {
  Tensor t = Random2of4(DType::kF32, 2, 8, 4);
  std::vector<uint8_t> bytes(t.data.data(), t.data.data() + t.data.size());
  const float three[4] = {1, 2, 3, 0};
  std::memcpy(bytes.data() + 8 * 4, three, 16);  // row 1, group 0
  t.data = TensorData::Owned(bytes);
  EXPECT_THAT(Pack2of4(t), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr("'w'"), HasSubstr("row 1 columns [0, 4)"),
                                          HasSubstr("3 or more nonzeros"))));
  Tensor odd = Random2of4(DType::kF32, 2, 8, 4);
  odd.dims = {4, 4};
  EXPECT_THAT(Pack2of4(odd), IsOk());
  odd.dims = {8, 2};
  EXPECT_THAT(Pack2of4(odd), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("multiple of 4 columns, found 2")));
  Tensor i8 = odd;
  i8.dtype = DType::kI8;
  i8.dims = {4, 16};
  EXPECT_THAT(Pack2of4(i8), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("f32/f16/bf16 weights only, found i8")));
  std::vector<uint8_t> values(8, 0), out(16, 0);
  const uint8_t bad_nibble[1] = {0x05};  // positions 1, 1
  EXPECT_THAT(Unpack2of4("w", DType::kF16, 1, 4, values.data(), 4, bad_nibble, 1,
                         out.data(), 8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'w'"), HasSubstr("positions 1, 1"))));
}

TEST(MeasureSparsityTest, CountsExactZerosOfFloatsAndSymmetricIntegers) {
  std::vector<float> w = {0, -0.0f, 1e-30f, 2, 0, 0, 3, 0};
  Tensor f;
  f.name = "f";
  f.dtype = DType::kF32;
  f.dims = {1, 8};
  f.data = TensorData::Owned(std::vector<uint8_t>(reinterpret_cast<uint8_t*>(w.data()),
                                                  reinterpret_cast<uint8_t*>(w.data() + 8)));
  auto m = MeasureSparsity(f);
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->zeros, 5u);
  EXPECT_EQ(m->numel, 8u);
  EXPECT_TRUE(m->holds_2of4);
  Tensor q;
  q.name = "q";
  q.dtype = DType::kI4;
  q.dims = {1, 8};
  q.quant.kind = QuantKind::kInt4GroupWise;
  q.quant.group_size = 8;
  q.quant.axis = 1;
  q.quant.scale = "q.scale";
  q.data = TensorData::Owned({0x70, 0x08, 0x10, 0x71});  // 0,7,-8,0 | 0,1,1,7
  m = MeasureSparsity(q);
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->zeros, 3u);
  EXPECT_FALSE(m->holds_2of4);  // the second group has 3 nonzeros
  q.quant.zero_point = "q.zero_point";
  EXPECT_THAT(MeasureSparsity(q), StatusIs(absl::StatusCode::kInvalidArgument,
                                           AllOf(HasSubstr("'q'"), HasSubstr("asymmetric"))));
}

}  // namespace
}  // namespace slimpack::ir
