// Writer/reader round trips: every dtype, metadata, canonical layout,
// atomic replace, and writer-side validation.
#include <cstring>

#include "ir/dtype.h"
#include "formats/safetensors/safetensors_reader.h"
#include "formats/safetensors/safetensors_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::safetensors {
namespace {

using ::slimpack::safetensors::testing::MakeTensor;
using ::slimpack::safetensors::testing::PatternBytes;
using ::slimpack::safetensors::testing::ReadWholeFile;
using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const ir::DType kAllDTypes[] = {
    ir::DType::kF64,  ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16,
    ir::DType::kI64,  ir::DType::kI32, ir::DType::kI16, ir::DType::kI8,
    ir::DType::kU64,  ir::DType::kU32, ir::DType::kU16, ir::DType::kU8,
    ir::DType::kBool,
};

std::vector<ir::Tensor> OneTensorPerDType() {
  std::vector<ir::Tensor> tensors;
  uint32_t seed = 1;
  for (ir::DType t : kAllDTypes) {
    std::vector<int64_t> dims = {3, static_cast<int64_t>(seed % 4 + 1)};
    size_t bytes = static_cast<size_t>(dims[0] * dims[1]) * DTypeBits(t) / 8;
    std::vector<uint8_t> data = PatternBytes(bytes, seed++);
    if (t == ir::DType::kBool) {
      for (auto& b : data) b &= 1;
    }
    tensors.push_back(MakeTensor("t_" + std::string(ir::DTypeName(t)), t, dims,
                                 std::move(data)));
  }
  return tensors;
}

TEST(SafetensorsRoundTripTest, EveryDTypeSurvivesWriteAndRead) {
  TempDir dir;
  const std::string path = dir.File("all.safetensors");
  std::vector<ir::Tensor> in = OneTensorPerDType();
  ASSERT_THAT(WriteSafetensorsFile(path, in, {{"format", "pt"}}), IsOk());

  auto file = ReadSafetensorsFile(path);
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(file->metadata,
            (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(file->tensors.size(), in.size());
  const std::string bytes = ReadWholeFile(path);
  for (const ir::Tensor& want : in) {
    SCOPED_TRACE(want.name);
    auto it =
        std::find_if(file->tensors.begin(), file->tensors.end(),
                     [&](const ir::Tensor& t) { return t.name == want.name; });
    ASSERT_NE(it, file->tensors.end());
    EXPECT_EQ(it->dtype, want.dtype);
    EXPECT_EQ(it->dims, want.dims);
    ASSERT_EQ(it->data.size(), want.data.size());
    EXPECT_EQ(std::memcmp(it->data.data(), want.data.data(), want.data.size()),
              0);
    EXPECT_TRUE(it->data.is_view());
    // Provenance points at the tensor's bytes in the file, and the data is
    // aligned to its element size (header padded to 8, big types first).
    EXPECT_EQ(it->provenance.file, path);
    const int64_t off = it->provenance.offset;
    ASSERT_GE(off, static_cast<int64_t>(file->data_start));
    EXPECT_EQ(bytes.compare(static_cast<size_t>(off), want.data.size(),
                            reinterpret_cast<const char*>(want.data.data()),
                            want.data.size()),
              0);
    EXPECT_EQ(off % (ir::DTypeBits(want.dtype) / 8), 0);
  }
}

TEST(SafetensorsRoundTripTest, HeaderIsCanonicalAndSpacePadded) {
  TempDir dir;
  const std::string path = dir.File("c.safetensors");
  std::vector<ir::Tensor> in = {
      MakeTensor("b", ir::DType::kU8, {3}, {1, 2, 3}),
      MakeTensor("a", ir::DType::kF32, {1}, PatternBytes(4, 7)),
  };
  ASSERT_THAT(WriteSafetensorsFile(path, in), IsOk());
  const std::string bytes = ReadWholeFile(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ(n % 8, 0u);
  const std::string header = bytes.substr(8, n);
  const std::string json =
      R"({"a":{"data_offsets":[0,4],"dtype":"F32","shape":[1]},)"
      R"("b":{"data_offsets":[4,7],"dtype":"U8","shape":[3]}})";
  EXPECT_EQ(header, json + std::string(n - json.size(), ' '));
  EXPECT_EQ(bytes.size(), 8 + n + 7);
}

TEST(SafetensorsRoundTripTest, OutputDoesNotDependOnInputOrder) {
  TempDir dir;
  std::vector<ir::Tensor> in = OneTensorPerDType();
  ASSERT_THAT(WriteSafetensorsFile(dir.File("1.safetensors"), in), IsOk());
  std::reverse(in.begin(), in.end());
  ASSERT_THAT(WriteSafetensorsFile(dir.File("2.safetensors"), in), IsOk());
  EXPECT_EQ(ReadWholeFile(dir.File("1.safetensors")),
            ReadWholeFile(dir.File("2.safetensors")));
}

TEST(SafetensorsRoundTripTest, ScalarsAndZeroSizeTensors) {
  TempDir dir;
  const std::string path = dir.File("z.safetensors");
  std::vector<ir::Tensor> in = {
      MakeTensor("scalar", ir::DType::kI64, {}, PatternBytes(8, 3)),
      MakeTensor("empty", ir::DType::kF32, {0, 5}, {}),
      MakeTensor("empty2", ir::DType::kF32, {4, 0}, {}),
  };
  ASSERT_THAT(WriteSafetensorsFile(path, in), IsOk());
  auto file = ReadSafetensorsFile(path);
  ASSERT_THAT(file, IsOk());
  ASSERT_EQ(file->tensors.size(), 3u);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& t : file->tensors) shapes[t.name] = t.dims;
  EXPECT_THAT(shapes["scalar"], ElementsAre());
  EXPECT_THAT(shapes["empty"], ElementsAre(0, 5));
  EXPECT_THAT(shapes["empty2"], ElementsAre(4, 0));
}

TEST(SafetensorsRoundTripTest, ReadsTheReferenceExampleFile) {
  // The byte string from the reference's Python tests (test_simple.py):
  // a 0x3c-byte header with the reference key order, 16 bytes of I32.
  TempDir dir;
  const std::string header =
      R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})";
  ASSERT_EQ(header.size(), 0x3cu);
  const std::string path = dir.File("ref.safetensors");
  testing::WriteFile(path,
                     testing::RawSafetensors(header, std::string(16, '\0')));
  auto file = ReadSafetensorsFile(path);
  ASSERT_THAT(file, IsOk());
  ASSERT_EQ(file->tensors.size(), 1u);
  EXPECT_EQ(file->tensors[0].dtype, ir::DType::kI32);
  EXPECT_THAT(file->tensors[0].dims, ElementsAre(2, 2));
  EXPECT_EQ(file->tensors[0].provenance.offset, 8 + 0x3c);
}

TEST(SafetensorsRoundTripTest, ZeroSizeTensorMayShareItsOffsetWithTheNext) {
  // The reference accepts [0,0] followed by [0,16]; so do we (no aliasing of
  // bytes is possible through an empty range).
  TempDir dir;
  const std::string path = dir.File("zs.safetensors");
  testing::WriteFile(
      path, testing::RawSafetensors(
                R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                R"("w":{"dtype":"I32","shape":[4],"data_offsets":[0,16]}}  )",
                std::string(16, '\1')));
  auto file = ReadSafetensorsFile(path);
  ASSERT_THAT(file, IsOk());
  ASSERT_EQ(file->tensors.size(), 2u);
  EXPECT_EQ(file->tensors[0].name, "e");
  EXPECT_EQ(file->tensors[0].data.size(), 0u);
  EXPECT_EQ(file->tensors[1].name, "w");
  EXPECT_EQ(file->tensors[1].data.data()[15], 1);
}

TEST(SafetensorsRoundTripTest, ReplacesAFileItsTensorsAreMappedFrom) {
  TempDir dir;
  const std::string path = dir.File("m.safetensors");
  ASSERT_THAT(WriteSafetensorsFile(path, OneTensorPerDType()), IsOk());
  auto first = ReadSafetensorsFile(path);
  ASSERT_THAT(first, IsOk());
  // Rewrite the same path from views into its own mapping, plus one more.
  std::vector<ir::Tensor> again = first->tensors;
  again.push_back(MakeTensor("extra", ir::DType::kU8, {2}, {9, 8}));
  ASSERT_THAT(WriteSafetensorsFile(path, again), IsOk());
  auto second = ReadSafetensorsFile(path);
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->tensors.size(), first->tensors.size() + 1);
  for (const auto& t : first->tensors) {
    auto it =
        std::find_if(second->tensors.begin(), second->tensors.end(),
                     [&](const ir::Tensor& u) { return u.name == t.name; });
    ASSERT_NE(it, second->tensors.end());
    EXPECT_EQ(std::memcmp(it->data.data(), t.data.data(), t.data.size()), 0);
  }
  EXPECT_THAT(testing::ListDir(dir.path()), ElementsAre("m.safetensors"));
}

struct WriterErrorCase {
  std::string name;
  std::vector<ir::Tensor> tensors;
  absl::StatusCode code;
  std::string message;
};

TEST(SafetensorsWriterTest, RejectsBadTensorsAndLeavesOldFileIntact) {
  const std::vector<WriterErrorCase> cases = {
      {"duplicate",
       {MakeTensor("w", ir::DType::kU8, {1}, {1}),
        MakeTensor("w", ir::DType::kU8, {1}, {2})},
       absl::StatusCode::kInvalidArgument,
       "tensor 'w': duplicate"},
      {"reserved",
       {MakeTensor("__metadata__", ir::DType::kU8, {1}, {1})},
       absl::StatusCode::kInvalidArgument,
       "reserved"},
      {"size",
       {MakeTensor("w", ir::DType::kF32, {2}, {1, 2, 3})},
       absl::StatusCode::kInvalidArgument,
       "has 3 bytes of data but f32 [2] needs 8"},
      {"int4",
       {MakeTensor("q", ir::DType::kI4, {4}, {1, 2})},
       absl::StatusCode::kUnimplemented,
       "dtype i4 cannot be stored"},
      {"empty_name",
       {MakeTensor("", ir::DType::kU8, {1}, {1})},
       absl::StatusCode::kInvalidArgument,
       "empty name"},
      {"bad_utf8",
       {MakeTensor("w\xff", ir::DType::kU8, {1}, {1})},
       absl::StatusCode::kInvalidArgument,
       "not valid UTF-8"},
  };
  TempDir dir;
  const std::string path = dir.File("keep.safetensors");
  ASSERT_THAT(
      WriteSafetensorsFile(path, {MakeTensor("ok", ir::DType::kU8, {1}, {5})}),
      IsOk());
  const std::string before = ReadWholeFile(path);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(WriteSafetensorsFile(path, c.tensors),
                StatusIs(c.code, ::testing::AllOf(HasSubstr(path),
                                                  HasSubstr(c.message))));
    EXPECT_EQ(ReadWholeFile(path), before);
    EXPECT_THAT(testing::ListDir(dir.path()), ElementsAre("keep.safetensors"));
  }
}

TEST(SafetensorsWriterTest, MissingDirectoryIsNotFound) {
  TempDir dir;
  const std::string path = dir.File("no/such/dir/x.safetensors");
  EXPECT_THAT(
      WriteSafetensorsFile(path, {MakeTensor("w", ir::DType::kU8, {1}, {1})}),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr(path)));
}

TEST(SafetensorsWriterTest, EmptyTensorListMakesAValidFile) {
  TempDir dir;
  const std::string path = dir.File("e.safetensors");
  ASSERT_THAT(WriteSafetensorsFile(path, {}), IsOk());
  auto file = ReadSafetensorsFile(path);
  ASSERT_THAT(file, IsOk());
  EXPECT_TRUE(file->tensors.empty());
  EXPECT_EQ(file->data_start % 8, 0u);
}

}  // namespace
}  // namespace slimpack::safetensors
