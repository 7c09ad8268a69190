#include "ir/dtype.h"
#include "ir/shape.h"
#include "gtest/gtest.h"

namespace slimpack::ir {
namespace {

TEST(DTypeTest, ByteSizesIncludingPackedInt4) {
  EXPECT_EQ(DTypeByteSize(DType::kF32, 10), 40u);
  EXPECT_EQ(DTypeByteSize(DType::kBF16, 3), 6u);
  EXPECT_EQ(DTypeByteSize(DType::kI4, 3), 2u);  // two per byte, rounded up
  EXPECT_EQ(DTypeByteSize(DType::kU4, 4), 2u);
  EXPECT_EQ(DTypeByteSize(DType::kBool, 5), 5u);
  EXPECT_FALSE(DTypeByteSize(DType::kF64, UINT64_MAX / 4).has_value());
  EXPECT_FALSE(DTypeByteSize(DType::kUndefined, 1).has_value());
}

TEST(DTypeTest, NamesRoundTrip) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                  DType::kI64, DType::kI32, DType::kI16, DType::kI8,
                  DType::kU8, DType::kBool, DType::kI4, DType::kU4}) {
    EXPECT_EQ(DTypeFromName(DTypeName(t)), t) << DTypeName(t);
  }
  EXPECT_FALSE(DTypeFromName("float32").has_value());
}

TEST(ShapeTest, SymbolicAndStatic) {
  Shape s({Dim::Symbolic("batch"), Dim::Static(3), Dim{}});
  EXPECT_EQ(s.ToString(), "[batch,3,?]");
  EXPECT_FALSE(s.is_static());
  EXPECT_FALSE(s.NumElements().has_value());
  Shape t = Shape::FromDims({2, 3, 4});
  EXPECT_EQ(t.NumElements(), 24u);
  EXPECT_EQ(Shape().ToString(), "<unknown rank>");
}

TEST(ShapeTest, OverflowingProductIsRejected) {
  // [4194305, 4194305, 211106198978564] wraps to exactly 4 in u64.
  EXPECT_FALSE(CheckedNumElements({4194305, 4194305, 211106198978564}));
  EXPECT_FALSE(CheckedNumElements({2, INT64_MAX}));
  EXPECT_FALSE(CheckedNumElements({-1, 2}));
  EXPECT_EQ(CheckedNumElements({}), 1u);
  EXPECT_EQ(CheckedNumElements({0, 5}), 0u);
}

}  // namespace
}  // namespace slimpack::ir
