// GgufWriter's streamed tensors (AddTensorStreamed): bytes handed over in
// pieces give the file a buffer filler gives, byte for byte; too few or too
// many bytes, or the streamer's own error, fail the write naming the tensor
// and leave no file.
#include "formats/gguf/gguf_writer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_macros.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace slimpack::gguf {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + 7 * i);
  return v;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Two q8_0 tensors (2 rows of 64: 136 bytes each) and an f32 one of 5
// values (20 bytes, padded to the alignment), filled or streamed.
absl::Status Write(const std::string& path, bool streamed, uint64_t piece,
                   int64_t extra_bytes = 0) {
  GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddU32("general.alignment", 64);
  const std::vector<std::vector<int64_t>> shapes = {{64, 2}, {5}, {64, 2}};
  const TensorType types[] = {TensorType::kQ8_0, TensorType::kF32, TensorType::kQ8_0};
  for (size_t t = 0; t < shapes.size(); ++t) {
    const std::string name = "t" + std::to_string(t);
    ASSIGN_OR_RETURN(const uint64_t size, GgufWriter::TensorBytes(name, shapes[t], types[t]));
    const std::vector<uint8_t> data = Bytes(size, static_cast<uint8_t>(t));
    if (!streamed) {
      RETURN_IF_ERROR(w.AddTensor(name, shapes[t], types[t], [data](uint8_t* dst, uint64_t n) {
        std::copy(data.begin(), data.begin() + static_cast<int64_t>(n), dst);
        return absl::OkStatus();
      }));
      continue;
    }
    const int64_t give = static_cast<int64_t>(size) + (t == 2 ? extra_bytes : 0);
    RETURN_IF_ERROR(w.AddTensorStreamed(
        name, shapes[t], types[t], [data, piece, give](uint64_t, const TensorSink& sink) -> absl::Status {
          std::vector<uint8_t> all = data;
          all.resize(static_cast<size_t>(std::max<int64_t>(give, 0)), 0);
          for (uint64_t at = 0; at < all.size(); at += piece) {
            RETURN_IF_ERROR(sink(all.data() + at, std::min<uint64_t>(piece, all.size() - at)));
          }
          return absl::OkStatus();
        }));
  }
  return w.Write(path).status();
}

TEST(GgufWriterTest, StreamedTensorsGiveTheFilledFile) {
  testing::TempDir dir;
  ASSERT_THAT(Write(dir.File("filled.gguf"), false, 0), IsOk());
  for (uint64_t piece : {1, 7, 64, 1000}) {
    const std::string path = dir.File("streamed" + std::to_string(piece) + ".gguf");
    ASSERT_THAT(Write(path, true, piece), IsOk());
    EXPECT_EQ(ReadFile(path), ReadFile(dir.File("filled.gguf"))) << "pieces of " << piece;
  }
}

TEST(GgufWriterTest, WrongStreamedSizeFailsNamingTheTensorAndWritesNothing) {
  testing::TempDir dir;
  EXPECT_THAT(Write(dir.File("short.gguf"), true, 10, -3),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("GGUF tensor 't2': 133 of its 136 bytes handed over")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("short.gguf")));
  EXPECT_THAT(Write(dir.File("long.gguf"), true, 10, 5),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("GGUF tensor 't2': more than its 136 bytes handed over")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("long.gguf")));
}

TEST(GgufWriterTest, AStreamersErrorIsReturnedWithTheTensorName) {
  testing::TempDir dir;
  GgufWriter w;
  ASSERT_THAT(w.AddTensorStreamed("w", {32}, TensorType::kQ8_0,
                                  [](uint64_t, const TensorSink&) -> absl::Status {
                                    return absl::InvalidArgumentError("row 3: weight is NaN");
                                  }),
              IsOk());
  EXPECT_THAT(w.Write(dir.File("bad.gguf")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("GGUF tensor 'w': row 3: weight is NaN")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("bad.gguf")));
  // A streamer that drops its sink's error still fails the write.
  GgufWriter w2;
  ASSERT_THAT(w2.AddTensorStreamed("w", {32}, TensorType::kQ8_0,
                                   [](uint64_t size, const TensorSink& sink) -> absl::Status {
                                     EXPECT_EQ(size, 34u);  // the tensor's bytes
                                     std::vector<uint8_t> too_many(40);
                                     (void)sink(too_many.data(), too_many.size());
                                     return absl::OkStatus();
                                   }),
              IsOk());
  EXPECT_THAT(w2.Write(dir.File("dropped.gguf")).status(),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("more than its 34 bytes")));
}

}  // namespace
}  // namespace slimpack::gguf
