// Packing round trips: ToIrTensors -> an independent decoder written from
// formats/shard/spec.md "Layouts" -> must equal Dequantize exactly.
#include "quantize/numerics/pack.h"

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float_convert.h"
#include "quantize/numerics/rtn.h"
#include "tests/quantize/numerics/quant_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::quant {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Element i of a payload as an integer, per spec section 2.
int32_t Element(const ir::Tensor& t, int64_t i) {
  const uint8_t* p = t.data.data();
  switch (t.dtype) {
    case ir::DType::kI8: return static_cast<int8_t>(p[i]);
    case ir::DType::kU8: return p[i];
    case ir::DType::kU4: return (i % 2 == 0) ? (p[i / 2] & 0xF) : (p[i / 2] >> 4);
    case ir::DType::kI4: {
      const int32_t v = (i % 2 == 0) ? (p[i / 2] & 0xF) : (p[i / 2] >> 4);
      return v >= 8 ? v - 16 : v;
    }
    default: ADD_FAILURE() << "unexpected dtype"; return 0;
  }
}

float F32(const ir::Tensor& t, int64_t i) {
  float f;
  std::memcpy(&f, t.data.data() + 4 * i, 4);
  return f;
}

// Naive rank-2 decoder of the int8_per_channel / int4_groupwise layouts.
std::vector<float> Decode(const PackedTensors& p) {
  const ir::Tensor& w = p.weight;
  const int64_t d0 = w.dims[0], d1 = w.dims[1];
  std::vector<float> out(static_cast<size_t>(d0 * d1));
  for (int64_t i = 0; i < d0; ++i) {
    for (int64_t j = 0; j < d1; ++j) {
      int64_t si;  // flat index into scale / zero point
      if (w.quant.kind == ir::QuantKind::kInt8PerChannel) {
        si = w.quant.axis == 0 ? i : j;
      } else {
        const int64_t g = w.quant.group_size;
        si = w.quant.axis == 0 ? (i / g) * d1 + j : i * p.scale.dims[1] + j / g;
      }
      const int32_t zp = p.zero_point ? Element(*p.zero_point, si) : 0;
      out[i * d1 + j] =
          static_cast<float>(Element(w, i * d1 + j) - zp) * F32(p.scale, si);
    }
  }
  return out;
}

struct Case {
  Scheme scheme;
  bool transposed;
  ir::DType dtype;
};

TEST(QuantPackTest, RoundTripsAllDtypesBothOrientations) {
  const int64_t rows = 5, cols = 37;  // odd numel; int4 g16 -> last group 5
  const std::vector<float> w = testing::Gaussian(rows * cols, 4);
  for (const Case& c : {Case{{8, 0, true}, false, ir::DType::kI8},
                        Case{{8, 0, false}, false, ir::DType::kU8},
                        Case{{4, 16, true}, false, ir::DType::kI4},
                        Case{{4, 16, false}, false, ir::DType::kU4},
                        Case{{8, 0, true}, true, ir::DType::kI8},
                        Case{{8, 0, false}, true, ir::DType::kU8},
                        Case{{4, 16, true}, true, ir::DType::kI4},
                        Case{{4, 16, false}, true, ir::DType::kU4},
                        Case{{4, 0, false}, true, ir::DType::kU4},
                        Case{{3, 8, false}, false, ir::DType::kU4},
                        Case{{6, 0, false}, true, ir::DType::kU8}}) {
    SCOPED_TRACE(c.scheme.ToString() + (c.transposed ? " transposed" : ""));
    // The transposed original holds w^T; quantize the [rows, cols] view.
    auto m = QuantizeRtn(w.data(), rows, cols, c.scheme, RtnOptions{});
    ASSERT_THAT(m, IsOk());
    ir::Tensor orig;
    orig.name = "layers.0.fc.weight";
    orig.dtype = ir::DType::kF32;
    orig.dims = c.transposed ? std::vector<int64_t>{cols, rows}
                             : std::vector<int64_t>{rows, cols};
    orig.provenance = ir::Provenance::FromNode("fc");
    orig.role = ir::WeightRole::kUpProj;
    orig.layer = 0;
    auto p = ToIrTensors(*m, orig, c.transposed, "rtn");
    ASSERT_THAT(p, IsOk());
    EXPECT_EQ(p->weight.dtype, c.dtype);
    EXPECT_EQ(p->weight.dims, orig.dims);
    EXPECT_EQ(p->weight.name, orig.name);
    EXPECT_EQ(p->weight.provenance, orig.provenance);
    EXPECT_EQ(p->weight.role, orig.role);
    EXPECT_EQ(p->scale.layer, 0);
    EXPECT_EQ(p->weight.quant.algorithm, "rtn");
    EXPECT_EQ(p->weight.quant.scale, "layers.0.fc.weight.scale");
    EXPECT_EQ(p->scale.name, "layers.0.fc.weight.scale");
    EXPECT_EQ(p->scale.dtype, ir::DType::kF32);
    const int64_t ng = m->num_groups();
    if (c.scheme.bits > 4) {
      EXPECT_EQ(p->weight.quant.kind, ir::QuantKind::kInt8PerChannel);
      EXPECT_EQ(p->weight.quant.axis, c.transposed ? 1 : 0);
      EXPECT_THAT(p->scale.dims, ElementsAre(rows));
    } else {
      EXPECT_EQ(p->weight.quant.kind, ir::QuantKind::kInt4GroupWise);
      EXPECT_EQ(p->weight.quant.axis, c.transposed ? 0 : 1);
      EXPECT_EQ(p->weight.quant.group_size, m->group_size());
      const std::vector<int64_t> sdims =
          c.transposed ? std::vector<int64_t>{ng, rows}
                       : std::vector<int64_t>{rows, ng};
      EXPECT_EQ(p->scale.dims, sdims);
    }
    for (const ir::Tensor* t : {&p->weight, &p->scale}) {
      auto bytes = t->ExpectedBytes();
      ASSERT_THAT(bytes, IsOk());
      EXPECT_EQ(*bytes, t->data.size()) << t->name;
    }
    if (c.scheme.symmetric) {
      EXPECT_FALSE(p->zero_point.has_value());
      EXPECT_TRUE(p->weight.quant.zero_point.empty());
    } else {
      ASSERT_TRUE(p->zero_point.has_value());
      EXPECT_EQ(p->zero_point->name, "layers.0.fc.weight.zero_point");
      EXPECT_EQ(p->weight.quant.zero_point, p->zero_point->name);
      EXPECT_EQ(p->zero_point->dtype, c.dtype);
      EXPECT_EQ(p->zero_point->dims, p->scale.dims);
      auto bytes = p->zero_point->ExpectedBytes();
      ASSERT_THAT(bytes, IsOk());
      EXPECT_EQ(*bytes, p->zero_point->data.size());
    }
    // 185 elements: the last byte's high nibble is zero (spec section 2).
    if (c.scheme.bits <= 4) {
      EXPECT_EQ(p->weight.data.data()[p->weight.data.size() - 1] >> 4, 0);
    }
    std::vector<float> expect(static_cast<size_t>(rows * cols));
    Dequantize(*m, expect.data());
    const std::vector<float> got = Decode(*p);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < cols; ++k) {
        const float g = c.transposed ? got[k * rows + r] : got[r * cols + k];
        ASSERT_EQ(g, expect[r * cols + k]) << r << "," << k;
      }
    }
  }
}

// A Conv weight [O, I, kh, kw] quantized as [O, I*kh*kw] keeps its rank-4
// dims with one scale per output channel along axis 0.
TEST(QuantPackTest, Int8AcceptsConvWeightDims) {
  const std::vector<float> w = testing::Gaussian(6 * 3 * 3 * 3, 9);
  auto m = QuantizeRtn(w.data(), 6, 27, Scheme{8, 0, false}, RtnOptions{});
  ASSERT_THAT(m, IsOk());
  ir::Tensor orig;
  orig.name = "conv1.weight";
  orig.dims = {6, 3, 3, 3};
  auto p = ToIrTensors(*m, orig, false, "rtn");
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->weight.dims, orig.dims);
  EXPECT_EQ(p->weight.quant.axis, 0);
  EXPECT_THAT(p->scale.dims, ElementsAre(6));
  std::vector<float> expect(w.size());
  Dequantize(*m, expect.data());
  for (int64_t i = 0; i < 6 * 27; ++i) {
    const float x = static_cast<float>(int{p->weight.data.data()[i]} -
                                       int{p->zero_point->data.data()[i / 27]}) *
                    F32(p->scale, i / 27);
    ASSERT_EQ(x, expect[i]) << i;
  }
  // int4 layouts group along one axis, so they need rank 2.
  auto m4 = QuantizeRtn(w.data(), 6, 27, Scheme{4, 0, true}, RtnOptions{});
  ASSERT_THAT(m4, IsOk());
  EXPECT_THAT(ToIrTensors(*m4, orig, false, "rtn"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("group-wise layouts need rank 2")));
  orig.dims = {6, 3, 3, 4};
  EXPECT_THAT(ToIrTensors(*m, orig, false, "rtn"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dims [6,3,3,4]")));
}

TEST(QuantPackTest, RejectsMismatchedShapesAndSizes) {
  const std::vector<float> w = testing::Gaussian(4 * 8, 1);
  auto m = QuantizeRtn(w.data(), 4, 8, Scheme{4, 4, false}, RtnOptions{});
  ASSERT_THAT(m, IsOk());
  ir::Tensor orig;
  orig.name = "w";
  orig.dims = {4, 8};
  EXPECT_THAT(ToIrTensors(*m, orig, /*transposed=*/true, "rtn"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'w': dims [4,8]")));
  QuantizedMatrix bad = *m;
  bad.zero.clear();
  EXPECT_THAT(ToIrTensors(bad, orig, false, "rtn"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("zero=0")));
  orig.name.clear();
  EXPECT_THAT(ToIrTensors(*m, orig, false, "rtn"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no name")));
}

// An f16-scale layout stores its scales as they are: one off the f16 grid
// (a matrix quantized with f32 scales, packed as f16) is refused naming it,
// the grid's own are stored exactly, both orientations.
TEST(QuantPackTest, F16ScalesOffTheGridAreRefusedAndOnItStoredExactly) {
  const std::vector<float> w = testing::Gaussian(4 * 64, 2);
  const Scheme f16{4, 32, true, ScaleDType::kF16};
  auto m = QuantizeRtn(w.data(), 4, 64, f16, RtnOptions{});
  ASSERT_THAT(m, IsOk());
  ir::Tensor orig;
  orig.name = "w";
  orig.dims = {4, 64};
  for (bool transposed : {false, true}) {
    if (transposed) orig.dims = {64, 4};
    auto p = ToIrTensors(*m, orig, transposed, "rtn");
    ASSERT_THAT(p, IsOk());
    ASSERT_EQ(p->scale.dtype, ir::DType::kF16);
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t g = 0; g < 2; ++g) {
        const int64_t at = transposed ? g * 4 + r : r * 2 + g;
        uint16_t h;
        std::memcpy(&h, p->scale.data.data() + 2 * at, 2);
        EXPECT_EQ(ir::F16ToF32(h), m->scale[r * 2 + g]) << r << " " << g << " " << transposed;
      }
    }
  }
  orig.dims = {4, 64};
  QuantizedMatrix off = *m;
  off.scale[5] = 0.1f;  // not an f16 value
  EXPECT_THAT(ToIrTensors(off, orig, false, "rtn"),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("'w': scale 5 = 0.1 is not on the f16 grid")));
}

}  // namespace
}  // namespace slimpack::quant
