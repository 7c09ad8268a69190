// DeferredWeights makes a weight's bytes (and its scale's and zero point's)
// on the first request of any of them, exactly QuantizeRtnTensor's, hands
// each out once, and names what it does not hold; streamed, a weight asked
// for first goes to the sink block by block, the same bytes.
#include "quantize/deferred_weights.h"

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "quantize/quantize_weights.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::quantize {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

ir::Tensor Weight() {
  ir::Tensor t;
  t.name = "w";
  t.dtype = ir::DType::kF32;
  t.dims = {6, 64};
  std::vector<float> v(6 * 64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

std::string Str(const ir::TensorData& d) {
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

TEST(DeferredWeightsTest, FirstRequestQuantizesAndEachTensorIsHandedOutOnce) {
  RtnTensorOptions o;
  o.scheme.bits = 4;
  o.scheme.group_size = 32;
  o.scheme.symmetric = false;
  o.algorithm = "imatrix";
  std::vector<float> importance(64);
  for (size_t i = 0; i < importance.size(); ++i) importance[i] = 0.5f + (i % 3);
  RtnTensorOptions direct = o;
  direct.rtn.importance = importance.data();
  auto want = QuantizeRtnTensor(Weight(), direct);
  ASSERT_THAT(want, IsOk());

  DeferredWeights d({});
  d.Add(Weight(), o, importance, {"w.scale", "w.zero_point"});
  EXPECT_TRUE(d.Holds("w.zero_point"));
  EXPECT_FALSE(d.Error("w").has_value());
  // The scale first (another shard may hold it): the weight is quantized then.
  auto scale = d.Produce("w.scale");
  ASSERT_THAT(scale, IsOk());
  EXPECT_EQ(Str(*scale), Str(want->packed.scale.data));
  auto w = d.Produce("w");
  ASSERT_THAT(w, IsOk());
  EXPECT_EQ(Str(*w), Str(want->packed.weight.data));
  auto zp = d.Produce("w.zero_point");
  ASSERT_THAT(zp, IsOk());
  EXPECT_EQ(Str(*zp), Str(want->packed.zero_point->data));
  ASSERT_TRUE(d.Error("w").has_value());
  EXPECT_EQ(d.Error("w")->err_sq, want->error.err_sq);

  EXPECT_THAT(d.Produce("w"), StatusIs(absl::StatusCode::kInternal, HasSubstr("'w' was asked for twice")));
  EXPECT_THAT(d.Produce("other"),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("'other' is not a deferred")));
}

TEST(DeferredWeightsTest, StreamedWeightFirstGoesBlockByBlockWithTheSameBytes) {
  RtnTensorOptions o;
  o.scheme.bits = 4;
  o.scheme.group_size = 32;
  o.scheme.symmetric = false;
  o.block_rows = 2;  // three blocks of the six rows
  auto want = QuantizeRtnTensor(Weight(), o);
  ASSERT_THAT(want, IsOk());
  auto joined_sink = [](std::string* out, int* pieces) {
    return [out, pieces](const uint8_t* data, uint64_t n) {
      out->append(reinterpret_cast<const char*>(data), n);
      ++*pieces;
      return absl::OkStatus();
    };
  };
  {
    DeferredWeights d({});
    d.Add(Weight(), o, {}, {"w.scale", "w.zero_point"});
    std::string w;
    int pieces = 0;
    ASSERT_THAT(d.ProduceStreamed("w", joined_sink(&w, &pieces)), IsOk());
    EXPECT_EQ(w, Str(want->packed.weight.data));
    EXPECT_EQ(pieces, 3);
    std::string scale;
    ASSERT_THAT(d.ProduceStreamed("w.scale", joined_sink(&scale, &pieces)), IsOk());
    EXPECT_EQ(scale, Str(want->packed.scale.data));
    auto zp = d.Produce("w.zero_point");
    ASSERT_THAT(zp, IsOk());
    EXPECT_EQ(Str(*zp), Str(want->packed.zero_point->data));
    ASSERT_TRUE(d.Error("w").has_value());
    EXPECT_EQ(d.Error("w")->err_sq, want->error.err_sq);
    EXPECT_THAT(d.ProduceStreamed("w", joined_sink(&w, &pieces)),
                StatusIs(absl::StatusCode::kInternal, HasSubstr("'w' was asked for twice")));
  }
  {
    // The zero point first: the weight is quantized whole then and handed over in one piece.
    DeferredWeights d({});
    d.Add(Weight(), o, {}, {"w.scale", "w.zero_point"});
    ASSERT_THAT(d.Produce("w.zero_point"), IsOk());
    std::string w;
    int pieces = 0;
    ASSERT_THAT(d.ProduceStreamed("w", joined_sink(&w, &pieces)), IsOk());
    EXPECT_EQ(w, Str(want->packed.weight.data));
    EXPECT_EQ(pieces, 1);
  }
  {
    // The sink's error stops the weight and is returned, on later requests too.
    DeferredWeights d({});
    d.Add(Weight(), o, {}, {"w.scale", "w.zero_point"});
    EXPECT_THAT(d.ProduceStreamed("w",
                                  [](const uint8_t*, uint64_t) {
                                    return absl::DataLossError("disk full");
                                  }),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("disk full")));
    EXPECT_THAT(d.Produce("w.scale"), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("disk full")));
  }
}

// Without a log nothing prints a deferred weight's error, so it is not
// measured: the same bytes, Written but no Error, and FinishDeferred still
// tells a weight never written from one written unmeasured.
TEST(DeferredWeightsTest, UnmeasuredWeightsAreWrittenWithTheSameBytesAndNoError) {
  RtnTensorOptions o;
  o.scheme.bits = 4;
  o.scheme.group_size = 32;
  auto want = QuantizeRtnTensor(Weight(), o);
  ASSERT_THAT(want, IsOk());
  // By blocks of rows, and transposed (ONNX MatMul B), which is quantized
  // whole: measured, then not.
  for (bool transposed : {false, true}) {
    RtnTensorOptions t = o;
    t.transposed = transposed;
    auto measured = QuantizeRtnTensor(Weight(), t);
    ASSERT_THAT(measured, IsOk());
    EXPECT_GT(measured->error.count, 0) << transposed;
    EXPECT_GT(measured->error.err_sq, 0.0) << transposed;
    t.measure_error = false;
    auto unmeasured = QuantizeRtnTensor(Weight(), t);
    ASSERT_THAT(unmeasured, IsOk());
    EXPECT_EQ(Str(unmeasured->packed.weight.data), Str(measured->packed.weight.data)) << transposed;
    EXPECT_EQ(Str(unmeasured->packed.scale.data), Str(measured->packed.scale.data)) << transposed;
    EXPECT_EQ(unmeasured->packed.weight.dims, measured->packed.weight.dims) << transposed;
    EXPECT_EQ(unmeasured->error.count, 0) << transposed;
  }
  o.measure_error = false;

  QuantizeResult result;
  result.deferred = std::make_shared<DeferredWeights>(std::vector<std::string>{});
  result.deferred->Add(Weight(), o, {}, {"w.scale"});
  TensorRecord rec;
  rec.tensor = "w";
  result.tensors.push_back(rec);
  std::vector<std::string> lines;
  const auto log = [&lines](const std::string& line) { lines.push_back(line); };
  EXPECT_THAT(FinishDeferred(result, log, /*all_written=*/true),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("'w' was deferred to the writer but never written")));
  EXPECT_FALSE(result.deferred->Written("w"));
  std::string w;
  ASSERT_THAT(result.deferred->ProduceStreamed("w",
                                               [&w](const uint8_t* data, uint64_t n) {
                                                 w.append(reinterpret_cast<const char*>(data), n);
                                                 return absl::OkStatus();
                                               }),
              IsOk());
  EXPECT_EQ(w, Str(want->packed.weight.data));
  EXPECT_TRUE(result.deferred->Written("w"));
  EXPECT_FALSE(result.deferred->Error("w").has_value());
  EXPECT_THAT(FinishDeferred(result, log, /*all_written=*/true), IsOk());
  EXPECT_TRUE(lines.empty());
  EXPECT_EQ(result.tensors[0].relative_l2, 0.0);
}

// Made ahead by an idle writer thread: the weight's bytes are kept and the
// writer's streamed request hands them over whole, the same bytes; a second
// request ahead, or one for an unknown name, does nothing.
TEST(DeferredWeightsTest, MadeAheadTheWriterGetsTheSameBytesInOnePiece) {
  RtnTensorOptions o;
  o.scheme.bits = 4;
  o.scheme.group_size = 32;
  o.scheme.symmetric = false;
  o.block_rows = 2;
  auto want = QuantizeRtnTensor(Weight(), o);
  ASSERT_THAT(want, IsOk());
  DeferredWeights d({});
  d.Add(Weight(), o, {}, {"w.scale", "w.zero_point"});
  d.ProduceAhead("w.scale");  // a companion's request makes the weight
  ASSERT_TRUE(d.Error("w").has_value());
  EXPECT_EQ(d.Error("w")->err_sq, want->error.err_sq);
  d.ProduceAhead("w");
  d.ProduceAhead("other");
  std::string w;
  int pieces = 0;
  ASSERT_THAT(d.ProduceStreamed("w",
                                [&](const uint8_t* data, uint64_t n) {
                                  w.append(reinterpret_cast<const char*>(data), n);
                                  ++pieces;
                                  return absl::OkStatus();
                                }),
              IsOk());
  EXPECT_EQ(w, Str(want->packed.weight.data));
  EXPECT_EQ(pieces, 1);
  auto scale = d.Produce("w.scale");
  ASSERT_THAT(scale, IsOk());
  EXPECT_EQ(Str(*scale), Str(want->packed.scale.data));
  auto zp = d.Produce("w.zero_point");
  ASSERT_THAT(zp, IsOk());
  EXPECT_EQ(Str(*zp), Str(want->packed.zero_point->data));
}

// A weight that fails when made ahead fails its writer's request.
TEST(DeferredWeightsTest, AnErrorMadeAheadIsTheWritersError) {
  RtnTensorOptions o;
  o.scheme.bits = 4;
  o.scheme.group_size = 32;
  o.algorithm = "imatrix";
  std::vector<float> importance(64, 1.0f);
  importance[7] = -1.0f;  // refused by the quantizer
  DeferredWeights d({});
  d.Add(Weight(), o, importance, {"w.scale"});
  d.ProduceAhead("w");
  EXPECT_THAT(d.Produce("w"), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("importance of column 7")));
}

TEST(DeferredWeightsTest, QuantizerErrorsNameTheWeightOnEveryRequest) {
  RtnTensorOptions o;
  o.scheme.bits = 4;
  o.scheme.group_size = 32;
  o.algorithm = "imatrix";
  std::vector<float> importance(64, 1.0f);
  importance[5] = -1.0f;  // refused by the quantizer
  DeferredWeights d({});
  d.Add(Weight(), o, importance, {"w.scale"});
  EXPECT_THAT(d.Produce("w"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'w'")));
  EXPECT_THAT(d.Produce("w.scale"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'w'")));
}

}  // namespace
}  // namespace slimpack::quantize
