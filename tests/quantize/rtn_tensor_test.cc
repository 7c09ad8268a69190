// QuantizeRtnTensor reads a weight a block of rows at a time: the bytes and
// error sums must be exactly those of the whole matrix at once (the
// numerics' own QuantizeRtn + ToIrTensors + CompareArrays), for every layout
// and source dtype, odd row counts and blocks that do not divide the rows.
#include "quantize/rtn_tensor.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/float_convert.h"
#include "ir/quant.h"
#include "quantize/numerics/quant_types.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::quantize {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;

ir::Tensor Weight(ir::DType dtype, std::vector<int64_t> dims, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t x = seed;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(static_cast<int32_t>(x >> 8) % 20000) / 7000.0f;
  }
  // A few outlier columns, as real weights have.
  for (size_t i = 3; i < v.size(); i += 37) v[i] *= 9.0f;
  ir::Tensor t;
  t.name = "layer.weight";
  t.dtype = dtype;
  t.dims = std::move(dims);
  std::vector<uint8_t> bytes(v.size() * (ir::DTypeBits(dtype) / 8));
  EXPECT_THAT(ir::ConvertFloats(ir::DType::kF32, reinterpret_cast<const uint8_t*>(v.data()),
                                dtype, bytes.data(), v.size()),
              IsOk());
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

std::string Bytes(const ir::Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.data.data()), t.data.size());
}

void ExpectSame(const QuantizedWeight& a, const QuantizedWeight& b, const std::string& what) {
  EXPECT_EQ(Bytes(a.packed.weight), Bytes(b.packed.weight)) << what;
  EXPECT_EQ(Bytes(a.packed.scale), Bytes(b.packed.scale)) << what;
  ASSERT_EQ(a.packed.zero_point.has_value(), b.packed.zero_point.has_value()) << what;
  if (a.packed.zero_point) {
    EXPECT_EQ(Bytes(*a.packed.zero_point), Bytes(*b.packed.zero_point)) << what;
  }
  EXPECT_EQ(a.packed.weight.dims, b.packed.weight.dims) << what;
  EXPECT_EQ(a.packed.scale.dims, b.packed.scale.dims) << what;
  EXPECT_TRUE(a.packed.weight.quant == b.packed.weight.quant) << what;
  // Bit-equal sums: the blocks continue one accumulation in order.
  EXPECT_EQ(std::memcmp(&a.error.err_sq, &b.error.err_sq, sizeof(double)), 0) << what;
  EXPECT_EQ(std::memcmp(&a.error.ref_sq, &b.error.ref_sq, sizeof(double)), 0) << what;
  EXPECT_EQ(a.error.max_abs, b.error.max_abs) << what;
}

struct Case {
  int bits;
  int64_t group;
  bool symmetric;
  ir::DType dtype;
  std::vector<int64_t> dims;
};

TEST(RtnTensorTest, BlocksGiveTheWholeMatrixBytes) {
  const std::vector<Case> cases = {
      {4, 32, true, ir::DType::kF32, {13, 64}},   // odd rows: a short last block
      {4, 32, false, ir::DType::kF16, {13, 96}},  // zero points packed in nibbles
      {4, 0, false, ir::DType::kBF16, {9, 40}},   // one group per row, 9 nibble pairs
      {8, 0, true, ir::DType::kF32, {11, 24}},
      {8, 0, false, ir::DType::kF16, {7, 3, 2, 2}},  // a Conv kernel, rows = dim 0
  };
  std::vector<float> importance(96);
  for (size_t i = 0; i < importance.size(); ++i) importance[i] = 1.0f + (i % 5);
  for (const Case& c : cases) {
    const ir::Tensor w = Weight(c.dtype, c.dims, 7 + c.bits);
    for (int variant = 0; variant < 3; ++variant) {
      RtnTensorOptions whole;
      whole.scheme.bits = c.bits;
      whole.scheme.group_size = c.group;
      whole.scheme.symmetric = c.symmetric;
      whole.algorithm = variant == 2 ? "imatrix" : "rtn";
      whole.rtn.mse_clip = variant == 1;
      auto shape = MatrixShape(w, false);
      ASSERT_THAT(shape, IsOk());
      if (variant == 2) whole.rtn.importance = importance.data();
      whole.block_rows = shape->first;  // one block
      const std::string what = "bits " + std::to_string(c.bits) + " group " +
                               std::to_string(c.group) + " variant " + std::to_string(variant);
      auto one = QuantizeRtnTensor(w, whole);
      ASSERT_THAT(one, IsOk()) << what;
      for (int64_t block : {2, 4, 6}) {
        RtnTensorOptions blocked = whole;
        blocked.block_rows = block;
        blocked.rtn.threads = 2;
        auto many = QuantizeRtnTensor(w, blocked);
        ASSERT_THAT(many, IsOk()) << what;
        ExpectSame(*one, *many, what + " block " + std::to_string(block));
      }
      // The default block height (kBlockWeights) covers these small
      // matrices in one block.
      RtnTensorOptions defaults = whole;
      defaults.block_rows = 0;
      auto default_blocks = QuantizeRtnTensor(w, defaults);
      ASSERT_THAT(default_blocks, IsOk());
      ExpectSame(*one, *default_blocks, what + " default blocks");
      // The stated error is the error of what is stored.
      auto deq = ir::DequantizeToF32(one->packed.weight, one->packed.scale,
                                     one->packed.zero_point ? &*one->packed.zero_point : nullptr);
      ASSERT_THAT(deq, IsOk()) << what;
      std::vector<float> r(deq->size());
      ASSERT_THAT(ir::ConvertFloats(w.dtype, w.data.data(), ir::DType::kF32,
                                    reinterpret_cast<uint8_t*>(r.data()), r.size()),
                  IsOk());
      const quant::ErrorStats e = quant::CompareArrays(r.data(), deq->data(), r.size());
      EXPECT_EQ(e.err_sq, one->error.err_sq) << what;
      // 4 bits with outliers: a relative error well under 1, above 0.
      EXPECT_GT(one->error.relative_l2(), 0.0) << what;
      EXPECT_LT(one->error.relative_l2(), c.bits == 8 ? 0.02 : 0.3) << what;
    }
  }
}

TEST(RtnTensorTest, RefusalsNameTheTensor) {
  // int4 needs rank 2: refused before any block is read.
  RtnTensorOptions o;
  o.scheme.bits = 4;
  o.scheme.group_size = 32;
  o.algorithm = "rtn";
  EXPECT_THAT(QuantizeRtnTensor(Weight(ir::DType::kF32, {4, 2, 32}, 1), o),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("'layer.weight'")));
  // A scheme the layouts cannot hold.
  RtnTensorOptions nine = o;
  nine.scheme.bits = 9;
  EXPECT_THAT(QuantizeRtnTensor(Weight(ir::DType::kF32, {4, 64}, 1), nine),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("'layer.weight'")));
  // Integer sources are not weights to quantize.
  ir::Tensor ints = Weight(ir::DType::kF32, {4, 64}, 1);
  ints.dtype = ir::DType::kI32;
  EXPECT_THAT(QuantizeRtnTensor(ints, o),
              StatusIs(absl::StatusCode::kUnimplemented, ::testing::HasSubstr("'layer.weight'")));
}

// A fold (AWQ's scales applied as the weight is read) quantizes what
// folding the tensor first and quantizing it gives, byte for byte and with
// the same error, whatever the blocks; lengths that do not fit are refused.
TEST(RtnTensorTest, FoldGivesTheBytesOfTheFoldedTensor) {
  const ir::Tensor w = Weight(ir::DType::kF16, {13, 64}, 3);
  auto fold = std::make_shared<ValueFold>();
  for (int c = 0; c < 64; ++c) fold->col_scale.push_back(0.5f + 0.03f * static_cast<float>(c));
  for (int r = 0; r < 13; ++r) fold->row_divisor.push_back(1.7f - 0.1f * static_cast<float>(r));
  // The folded tensor as awq_fold.cc stores it: columns scaled, then rows
  // divided, in f32.
  std::vector<float> v(13 * 64);
  ASSERT_THAT(ir::ConvertFloats(w.dtype, w.data.data(), ir::DType::kF32,
                                reinterpret_cast<uint8_t*>(v.data()), v.size()),
              IsOk());
  for (int r = 0; r < 13; ++r) {
    for (int c = 0; c < 64; ++c) v[r * 64 + c] *= fold->col_scale[c];
  }
  for (int r = 0; r < 13; ++r) {
    for (int c = 0; c < 64; ++c) v[r * 64 + c] /= fold->row_divisor[r];
  }
  ir::Tensor folded = w;
  folded.dtype = ir::DType::kF32;
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  folded.data = ir::TensorData::Owned(std::move(bytes));
  RtnTensorOptions o;
  o.scheme.bits = 4;
  o.scheme.group_size = 32;
  o.algorithm = "awq";
  auto want = QuantizeRtnTensor(folded, o);
  ASSERT_THAT(want, IsOk());
  for (int64_t block : {0, 2, 6}) {
    RtnTensorOptions lazy = o;
    lazy.block_rows = block;
    lazy.fold = fold;
    auto got = QuantizeRtnTensor(w, lazy);
    ASSERT_THAT(got, IsOk());
    ExpectSame(*want, *got, "block " + std::to_string(block));
  }
  // Columns only, and the scales' length checked.
  auto cols_only = std::make_shared<ValueFold>();
  cols_only->col_scale = fold->col_scale;
  RtnTensorOptions c = o;
  c.fold = cols_only;
  EXPECT_THAT(QuantizeRtnTensor(w, c), IsOk());
  cols_only->col_scale.pop_back();
  EXPECT_THAT(QuantizeRtnTensor(w, c),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("'layer.weight': a fold of 63 column scales")));
  RtnTensorOptions t = o;
  t.fold = fold;
  t.transposed = true;
  EXPECT_THAT(QuantizeRtnTensor(Weight(ir::DType::kF32, {64, 13}, 1), t),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("transposed")));
}

}  // namespace
}  // namespace slimpack::quantize
