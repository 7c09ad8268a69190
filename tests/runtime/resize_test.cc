// Resize (nearest, linear, cubic; coordinate modes; scales or sizes) and
// Upsample.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/op_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::runtime::testing::ExpectFloats;
using ::slimpack::runtime::testing::F32;
using ::slimpack::runtime::testing::I64;
using ::slimpack::runtime::testing::OpTest;
using ::slimpack::runtime::testing::RunOne;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;
using Attr = ir::Attribute;

RtTensor X12() { return F32({1, 1, 1, 2}, {1, 3}); }
RtTensor Scales(float s) { return F32({4}, {1, 1, 1, s}); }

TEST(ResizeTest, NearestUpsample) {
  // half_pixel + round_prefer_floor: x_in = (o + 0.5)/2 - 0.5 = -0.25,
  // 0.25, 0.75, 1.25 -> 0, 0, 1, 1.
  ExpectFloats(RunOne({"Resize", {{"x", X12()}, {"", RtTensor()}, {"s", Scales(2)}}}), {1, 1, 1, 4},
               {1, 1, 3, 3});
  // asymmetric + floor on 3x: 0, 0.33, 0.67, 1, 1.33, 1.67 -> 0,0,0,1,1,1.
  ExpectFloats(RunOne({"Resize", {{"x", X12()}, {"", RtTensor()}, {"s", Scales(3)}},
                       {{"coordinate_transformation_mode", Attr::String("asymmetric")},
                        {"nearest_mode", Attr::String("floor")}}}),
               {1, 1, 1, 6}, {1, 1, 1, 3, 3, 3});
}

TEST(ResizeTest, LinearModes) {
  // half_pixel: x_in = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1).
  ExpectFloats(RunOne({"Resize", {{"x", X12()}, {"", RtTensor()}, {"s", Scales(2)}},
                       {{"mode", Attr::String("linear")}}}),
               {1, 1, 1, 4}, {1, 1.5f, 2.5f, 3});
  // align_corners to 4: x_in = 0, 1/3, 2/3, 1.
  ExpectFloats(RunOne({"Resize", {{"x", X12()}, {"", RtTensor()}, {"", RtTensor()},
                                  {"sz", I64({4}, {1, 1, 1, 4})}},
                       {{"mode", Attr::String("linear")},
                        {"coordinate_transformation_mode", Attr::String("align_corners")}}}),
               {1, 1, 1, 4}, {1, 1 + 2.0f / 3, 1 + 4.0f / 3, 3});
  // asymmetric: x_in = 0, 0.5, 1, 1.5 -> clamp.
  ExpectFloats(RunOne({"Resize", {{"x", X12()}, {"", RtTensor()}, {"s", Scales(2)}},
                       {{"mode", Attr::String("linear")},
                        {"coordinate_transformation_mode", Attr::String("asymmetric")}}}),
               {1, 1, 1, 4}, {1, 2, 3, 3});
}

TEST(ResizeTest, BilinearIsSeparable) {
  // 2x2 -> 4x4 bilinear (half_pixel): product of the 1-d weights.
  RtTensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  RtTensor y = RunOne({"Resize", {{"x", x}, {"", RtTensor()}, {"s", F32({4}, {1, 1, 2, 2})}},
                       {{"mode", Attr::String("linear")}}});
  const float w[4] = {0, 0.25f, 0.75f, 1};  // fraction toward index 1
  std::vector<float> want;
  for (float wy : w) {
    for (float wx : w) {
      const float top = 1 + wx * (2 - 1), bottom = 3 + wx * (4 - 3);
      want.push_back(top + wy * (bottom - top));
    }
  }
  ExpectFloats(y, {1, 1, 4, 4}, want);
}

TEST(ResizeTest, DownsampleNearestAndOpset10) {
  RtTensor x = F32({1, 1, 1, 4}, {1, 2, 3, 4});
  // half_pixel, scale 0.5: x_in = 0.5, 2.5 -> round_prefer_floor -> 0, 2.
  ExpectFloats(RunOne({"Resize", {{"x", x}, {"", RtTensor()}, {"s", Scales(0.5f)}}}), {1, 1, 1, 2},
               {1, 3});
  // Opset 10 form (X, scales): asymmetric coordinates.
  ExpectFloats(RunOne({"Resize", {{"x", X12()}, {"s", Scales(2)}}, {}, 1, 10}), {1, 1, 1, 4},
               {1, 1, 3, 3});
  ExpectFloats(RunOne({"Upsample", {{"x", X12()}, {"s", Scales(2)}}, {}, 1, 9}), {1, 1, 1, 4},
               {1, 1, 3, 3});
}

TEST(ResizeTest, CubicUpsample) {
  // half_pixel 2x: x_in = -0.25, 0.25, 0.75, 1.25. Taps floor-1..floor+2
  // (edge-clamped) with Keys' weights at a = -0.75; for t = 0.75 they are
  // far(1.75), near(0.75), near(0.25), far(1.25) =
  // -0.03515625, 0.26171875, 0.87890625, -0.10546875 (t = 0.25 reversed).
  const double w0 = -0.03515625, w1 = 0.26171875, w2 = 0.87890625, w3 = -0.10546875;
  const float y0 = static_cast<float>((w0 + w1 + w2) * 1 + w3 * 3);  // taps 0,0,0,1
  const float y1 = static_cast<float>((w3 + w2) * 1 + (w1 + w0) * 3);  // taps 0,0,1,1
  ExpectFloats(RunOne({"Resize", {{"x", X12()}, {"", RtTensor()}, {"s", Scales(2)}},
                       {{"mode", Attr::String("cubic")}}}),
               {1, 1, 1, 4}, {y0, y1, 4 - y1, 4 - y0});
  // exclude_outside drops the taps before the start and renormalizes;
  // a whole-number x_in (asymmetric 0, 1) weighs its own tap 1.
  const float e0 = static_cast<float>((w2 * 1 + w3 * 3) / (w2 + w3));
  RtTensor ex = RunOne({"Resize", {{"x", X12()}, {"", RtTensor()}, {"s", Scales(2)}},
                        {{"mode", Attr::String("cubic")}, {"exclude_outside", Attr::Int(1)}}});
  ASSERT_EQ(ex.num_elements(), 4) << ex.DebugString();
  EXPECT_NEAR(ex.data<float>()[0], e0, 1e-6);
  RtTensor as = RunOne({"Resize", {{"x", X12()}, {"", RtTensor()}, {"s", Scales(2)}},
                        {{"mode", Attr::String("cubic")},
                         {"coordinate_transformation_mode", Attr::String("asymmetric")}}});
  ASSERT_EQ(as.num_elements(), 4) << as.DebugString();
  EXPECT_FLOAT_EQ(as.data<float>()[0], 1);
  EXPECT_FLOAT_EQ(as.data<float>()[2], 3);
}

TEST(ResizeTest, UnsupportedModesAreReported) {
  auto bogus = OpTest{"Resize", {{"x", X12()}, {"", RtTensor()}, {"s", Scales(2)}},
                      {{"mode", Attr::String("bicubic")}}}.Run();
  EXPECT_THAT(bogus, StatusIs(absl::StatusCode::kUnimplemented,
                              HasSubstr("supported: nearest, linear, cubic")));
  auto crop = OpTest{"Resize", {{"x", X12()}, {"", RtTensor()}, {"s", Scales(2)}},
                     {{"coordinate_transformation_mode", Attr::String("tf_crop_and_resize")}}}.Run();
  EXPECT_THAT(crop, StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("tf_crop_and_resize")));
}

}  // namespace
}  // namespace slimpack::runtime
