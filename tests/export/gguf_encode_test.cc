// EncodeTensor (a float weight widened and encoded a row at a time, rows
// chunked over threads, rotary rows permuted on the way) against the
// whole-tensor path it replaced for float sources, ReadValuesF32 +
// EncodeRows: the same bytes for every source dtype, rotary or not, block
// and float types, with importance, thread counts above the chunk count
// and a partial last chunk; a rotary bias (permuted as [rows, 1], encoded
// as one row) falls back to the whole-tensor path; a bad row is named.
// EncodeTensorStreamed hands the same bytes to a sink in order, one call
// at a time, and stops at the sink's error.
#include "export/gguf_encode.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "formats/gguf/ggml_blocks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/float_convert.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf_export {
namespace {

using gguf::TensorType;
using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;

ir::Tensor Source(std::vector<int64_t> dims, ir::DType dtype, uint32_t seed) {
  int64_t numel = 1;
  for (int64_t d : dims) numel *= d;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 0.05f);
  std::vector<float> values(static_cast<size_t>(numel));
  for (float& v : values) v = normal(rng) * (rng() % 64 == 0 ? 30.f : 1.f);
  ir::Tensor t;
  t.name = "model.layers.0.self_attn.k_proj.weight";
  t.dims = std::move(dims);
  t.dtype = dtype;
  std::vector<uint8_t> bytes(static_cast<size_t>(numel) * ir::DTypeBits(dtype) / 8);
  EXPECT_TRUE(ir::ConvertFloats(ir::DType::kF32, reinterpret_cast<const uint8_t*>(values.data()),
                                dtype, bytes.data(), static_cast<uint64_t>(numel))
                  .ok());
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

std::vector<uint8_t> WholeTensor(const Planned& p, TensorType type, int64_t rows, int64_t cols,
                                 const float* importance, int threads) {
  std::vector<float> values;
  EXPECT_THAT(ReadValuesF32(p, static_cast<uint64_t>(rows * cols), threads, values), IsOk());
  std::vector<uint8_t> bytes(static_cast<size_t>(gguf::RowBytes(type, cols) * rows));
  EXPECT_THAT(EncodeRows(type, values, rows, cols, importance, threads, bytes.data(), bytes.size()),
              IsOk());
  return bytes;
}

// EncodeTensorStreamed's pieces joined; the sink is never entered twice
// at once, and a tensor of several chunks arrives in several pieces.
std::vector<uint8_t> Streamed(const Planned& p, TensorType type, int64_t rows, int64_t cols,
                              const float* importance, int threads, uint64_t size) {
  std::vector<uint8_t> joined;
  std::atomic<int> inside{0};
  int pieces = 0;
  EXPECT_THAT(EncodeTensorStreamed(p, type, rows, cols, importance, threads, nullptr, size,
                                   [&](const uint8_t* data, uint64_t n) {
                                     EXPECT_EQ(inside++, 0);
                                     joined.insert(joined.end(), data, data + n);
                                     ++pieces;
                                     --inside;
                                     return absl::OkStatus();
                                   }),
              IsOk());
  if (threads > 1) {
    EXPECT_GT(pieces, 1);
  }
  return joined;
}

TEST(GgufEncodeTest, StreamingEncodeEqualsWholeTensorEncode) {
  constexpr int64_t kRows = 56, kCols = 256;  // 56 rows: 4 rotary heads of 14
  std::vector<float> importance(kCols);
  for (int64_t c = 0; c < kCols; ++c) importance[c] = 0.5f + static_cast<float>(c % 9);
  int checked = 0;
  for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16, ir::DType::kF32}) {
    const ir::Tensor t = Source({kRows, kCols}, dtype, 3);
    for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ5_1,
                            TensorType::kQ4_K, TensorType::kQ6_K, TensorType::kF16}) {
      for (int64_t rope_heads : {0, 4}) {
        for (int threads : {1, 2, 5, 64}) {
          for (bool weighted : {false, true}) {
            Planned p;
            p.source = &t;
            p.rope_heads = rope_heads;
            const float* imp = weighted ? importance.data() : nullptr;
            const std::vector<uint8_t> want = WholeTensor(p, type, kRows, kCols, imp, threads);
            std::vector<uint8_t> got(want.size(), 0xAB);
            ASSERT_THAT(EncodeTensor(p, type, kRows, kCols, imp, threads, nullptr, got.data(),
                                     got.size()),
                        IsOk());
            EXPECT_EQ(got, want) << gguf::TypeName(type) << " from " << ir::DTypeName(dtype)
                                 << ", rope heads " << rope_heads << ", " << threads
                                 << " threads, importance " << weighted;
            EXPECT_EQ(Streamed(p, type, kRows, kCols, imp, threads, want.size()), want)
                << "streamed, " << gguf::TypeName(type) << " from " << ir::DTypeName(dtype)
                << ", rope heads " << rope_heads << ", " << threads << " threads";
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 3 * 6 * 2 * 4 * 2);
}

TEST(GgufEncodeTest, RotaryBiasFallsBackToTheWholeTensor) {
  const ir::Tensor bias = Source({56}, ir::DType::kF16, 5);
  Planned p;
  p.source = &bias;
  p.rope_heads = 4;  // permuted as [56, 1], encoded as one row of 56
  const std::vector<uint8_t> want = WholeTensor(p, TensorType::kF32, 1, 56, nullptr, 2);
  std::vector<uint8_t> got(want.size());
  ASSERT_THAT(EncodeTensor(p, TensorType::kF32, 1, 56, nullptr, 2, nullptr, got.data(),
                           got.size()),
              IsOk());
  EXPECT_EQ(got, want);
  EXPECT_EQ(Streamed(p, TensorType::kF32, 1, 56, nullptr, 1, want.size()), want);
  // And the permutation did happen: the unpermuted bias differs.
  p.rope_heads = 0;
  EXPECT_NE(WholeTensor(p, TensorType::kF32, 1, 56, nullptr, 2), want);
}

// A slow sink: while its first calls sleep, the other threads finish
// later chunks, which must still arrive in order (and the encoders wait
// for room instead of piling them up).
TEST(GgufEncodeTest, SlowSinkStillGetsTheChunksInOrder) {
  const ir::Tensor t = Source({512, 256}, ir::DType::kF16, 6);  // 16 chunks on 4 threads
  Planned p;
  p.source = &t;
  const uint64_t size = static_cast<uint64_t>(gguf::RowBytes(TensorType::kQ4_K, 256) * 512);
  std::vector<uint8_t> want(size);
  ASSERT_THAT(EncodeTensor(p, TensorType::kQ4_K, 512, 256, nullptr, 4, nullptr, want.data(), size),
              IsOk());
  std::vector<uint8_t> joined;
  int calls = 0;
  ASSERT_THAT(EncodeTensorStreamed(p, TensorType::kQ4_K, 512, 256, nullptr, 4, nullptr, size,
                                   [&](const uint8_t* data, uint64_t n) {
                                     if (calls++ < 3) {
                                       std::this_thread::sleep_for(std::chrono::milliseconds(30));
                                     }
                                     joined.insert(joined.end(), data, data + n);
                                     return absl::OkStatus();
                                   }),
              IsOk());
  EXPECT_EQ(calls, 16);
  EXPECT_EQ(joined, want);
}

TEST(GgufEncodeTest, StreamedStopsAtTheSinksError) {
  const ir::Tensor t = Source({64, 256}, ir::DType::kF16, 4);
  Planned p;
  p.source = &t;
  const uint64_t size = static_cast<uint64_t>(gguf::RowBytes(TensorType::kQ4_K, 256) * 64);
  int calls = 0;
  EXPECT_THAT(EncodeTensorStreamed(p, TensorType::kQ4_K, 64, 256, nullptr, 2, nullptr, size,
                                   [&](const uint8_t*, uint64_t) {
                                     ++calls;
                                     return absl::DataLossError("disk full");
                                   }),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("disk full")));
  EXPECT_EQ(calls, 1);
  // A non-finite weight is named as in the buffered path.
  ir::Tensor bad = Source({40, 64}, ir::DType::kF32, 9);
  std::vector<uint8_t> bytes(bad.data.data(), bad.data.data() + bad.data.size());
  const float inf = INFINITY;
  std::memcpy(bytes.data() + (21 * 64 + 3) * 4, &inf, 4);
  bad.data = ir::TensorData::Owned(std::move(bytes));
  p.source = &bad;
  EXPECT_THAT(EncodeTensorStreamed(p, TensorType::kQ8_0, 40, 64, nullptr, 3, nullptr,
                                   static_cast<uint64_t>(gguf::RowBytes(TensorType::kQ8_0, 64) * 40),
                                   [](const uint8_t*, uint64_t) { return absl::OkStatus(); }),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("row 21")));
}

TEST(GgufEncodeTest, ANonFiniteWeightNamesItsRow) {
  ir::Tensor t = Source({40, 64}, ir::DType::kF32, 9);
  std::vector<uint8_t> bytes(t.data.data(), t.data.data() + t.data.size());
  const float nan = std::nanf("");
  std::memcpy(bytes.data() + (30 * 64 + 7) * 4, &nan, 4);
  t.data = ir::TensorData::Owned(std::move(bytes));
  Planned p;
  p.source = &t;
  std::vector<uint8_t> out(static_cast<size_t>(gguf::RowBytes(TensorType::kQ8_0, 64) * 40));
  EXPECT_THAT(EncodeTensor(p, TensorType::kQ8_0, 40, 64, nullptr, 3, nullptr, out.data(),
                           out.size()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("row 30")));
}

}  // namespace
}  // namespace slimpack::gguf_export
