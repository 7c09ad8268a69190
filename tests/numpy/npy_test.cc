// .npy round trips for every supported dtype and a table of malformed files,
// each with the code and message field it must produce.
#include <cstring>
#include <string>
#include <vector>

#include "formats/numpy/numpy_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::numpy {
namespace {

using ::slimpack::safetensors::testing::PatternBytes;
using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

ir::Tensor Make(const std::string& name, ir::DType dtype, std::vector<int64_t> dims) {
  ir::Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.dims = std::move(dims);
  const uint64_t n = *t.ExpectedBytes();
  std::vector<uint8_t> bytes = PatternBytes(n, 7);
  if (dtype == ir::DType::kBool) {
    for (auto& b : bytes) b &= 1;
  }
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

std::string Bytes(const ir::Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.data.data()), t.data.size());
}

// A v1 .npy image with `dict` as header (padded to 64) followed by `data`.
std::string RawNpy(const std::string& dict, const std::string& data, int major = 1) {
  std::string h = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64 != 0) h.push_back(' ');
  h.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<char>((h.size() >> (8 * i)) & 0xFF));
  return out + h + data;
}

class NpyRoundTripTest : public ::testing::TestWithParam<ir::DType> {};

TEST_P(NpyRoundTripTest, WritesAndReadsBackEveryDtype) {
  TempDir dir;
  for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 3, 5}, {7}, {}, {0, 4}}) {
    ir::Tensor t = Make("x", GetParam(), dims);
    ASSERT_THAT(WriteNpy(dir.File("x.npy"), t), IsOk());
    auto back = ReadNpy(dir.File("x.npy"));
    ASSERT_THAT(back, IsOk());
    EXPECT_EQ(back->name, "x");
    EXPECT_EQ(back->dtype, t.dtype);
    EXPECT_EQ(back->dims, t.dims);
    EXPECT_EQ(Bytes(*back), Bytes(t));
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypes, NpyRoundTripTest,
    ::testing::Values(ir::DType::kF32, ir::DType::kF64, ir::DType::kF16, ir::DType::kI64,
                      ir::DType::kI32, ir::DType::kI16, ir::DType::kI8, ir::DType::kU8,
                      ir::DType::kBool, ir::DType::kU16, ir::DType::kU32, ir::DType::kU64));

TEST(NpyTest, DataStartsOn64ByteBoundaryAndHeaderIsNumpyStyle) {
  auto image = EncodeNpy(Make("x", ir::DType::kF32, {2, 3}));
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ((image->size() - 24) % 64, 0u);
  EXPECT_THAT(*image, HasSubstr("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
}

TEST(NpyTest, ReadsVersion2And3Headers) {
  const std::string data(12, '\x01');
  for (int major : {2, 3}) {
    const std::string raw = RawNpy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", data, major);
    auto t = ParseNpy(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), "v", "v.npy");
    ASSERT_THAT(t, IsOk());
    EXPECT_EQ(t->dims, std::vector<int64_t>{3});
    EXPECT_EQ(t->dtype, ir::DType::kI32);
  }
}

TEST(NpyTest, Bf16HasNoNumpyDescr) {
  TempDir dir;
  EXPECT_THAT(WriteNpy(dir.File("b.npy"), Make("b", ir::DType::kBF16, {2})),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("bf16")));
}

TEST(NpyTest, MissingFileIsNotFound) {
  EXPECT_THAT(ReadNpy("/nonexistent/dir/a.npy"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/dir/a.npy")));
}

struct BadNpy {
  const char* label;
  std::string bytes;
  absl::StatusCode code;
  const char* message;
};

std::vector<BadNpy> BadNpyCases() {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string eight(8, '\0');
  std::string bad_magic = RawNpy(ok_dict, eight);
  bad_magic[1] = 'X';
  std::string bad_version = RawNpy(ok_dict, eight);
  bad_version[6] = 4;
  std::string long_header = RawNpy(ok_dict, eight);
  long_header[8] = '\xff';
  long_header[9] = '\xff';
  return {
      {"empty", "", absl::StatusCode::kInvalidArgument, "magic"},
      {"bad_magic", bad_magic, absl::StatusCode::kInvalidArgument, "magic"},
      {"bad_version", bad_version, absl::StatusCode::kInvalidArgument, "version 4.0"},
      {"header_len_past_end", long_header, absl::StatusCode::kOutOfRange, "header length 65535"},
      {"fortran", RawNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", eight),
       absl::StatusCode::kUnimplemented, "fortran_order"},
      {"big_endian", RawNpy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", eight),
       absl::StatusCode::kUnimplemented, "big-endian descr '>f4'"},
      {"unknown_descr", RawNpy("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", eight),
       absl::StatusCode::kUnimplemented, "'<c8'"},
      {"structured", RawNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", eight),
       absl::StatusCode::kUnimplemented, "structured"},
      {"missing_shape", RawNpy("{'descr': '<f4', 'fortran_order': False, }", eight),
       absl::StatusCode::kInvalidArgument, "lacks key 'shape'"},
      {"duplicate_key", RawNpy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", eight),
       absl::StatusCode::kInvalidArgument, "duplicate key 'descr'"},
      {"unknown_key", RawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", eight),
       absl::StatusCode::kInvalidArgument, "unknown key 'x'"},
      {"negative_dim", RawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", eight),
       absl::StatusCode::kInvalidArgument, "negative dimension"},
      {"shape_not_tuple", RawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", eight),
       absl::StatusCode::kInvalidArgument, "not a tuple"},
      {"shape_overflow",
       RawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", eight),
       absl::StatusCode::kInvalidArgument, "overflows"},
      {"dim_over_int64",
       RawNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", eight),
       absl::StatusCode::kInvalidArgument, "exceeds int64"},
      {"truncated_data", RawNpy(ok_dict, std::string(7, '\0')), absl::StatusCode::kOutOfRange,
       "needs 8 bytes"},
      {"trailing_bytes", RawNpy(ok_dict, std::string(9, '\0')), absl::StatusCode::kInvalidArgument,
       "1 trailing bytes"},
      {"garbage_after_dict", RawNpy(ok_dict + " x", eight), absl::StatusCode::kInvalidArgument,
       "after '}'"},
      {"bool_as_int", RawNpy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", eight),
       absl::StatusCode::kInvalidArgument, "True or False"},
      {"non_ascii_v1", RawNpy("{'descr': '<f4\xc3\xa9', 'fortran_order': False, 'shape': (2,), }", eight),
       absl::StatusCode::kInvalidArgument, "not ASCII"},
  };
}

TEST(NpyTest, RejectsEveryMalformedFileWithItsOwnError) {
  TempDir dir;
  for (const BadNpy& c : BadNpyCases()) {
    SCOPED_TRACE(c.label);
    const std::string path = dir.File(std::string(c.label) + ".npy");
    WriteFile(path, c.bytes);
    auto t = ReadNpy(path);
    EXPECT_THAT(t, StatusIs(c.code, HasSubstr(c.message)));
    if (!t.ok()) {
      EXPECT_THAT(std::string(t.status().message()), HasSubstr(path));
    }
  }
}

}  // namespace
}  // namespace slimpack::numpy
