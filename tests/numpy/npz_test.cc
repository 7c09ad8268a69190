// .npz round trips and a corruption table: each handmade archive defect must
// produce its own error code and name the archive and entry.
#include <cstring>
#include <functional>
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
using ::slimpack::safetensors::testing::ReadWholeFile;
using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

ir::Tensor Make(const std::string& name, ir::DType dtype, std::vector<int64_t> dims,
                uint32_t seed) {
  ir::Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(PatternBytes(*t.ExpectedBytes(), seed));
  return t;
}

uint32_t Get(const std::string& s, size_t pos, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[pos + i]);
  return v;
}
void Set(std::string& s, size_t pos, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[pos + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

TEST(NpzTest, RoundTripsSeveralTensorsInOrder) {
  TempDir dir;
  std::vector<ir::Tensor> in = {Make("logits", ir::DType::kF32, {2, 3, 4}, 1),
                                Make("ids", ir::DType::kI64, {5}, 2),
                                Make("empty", ir::DType::kU8, {0}, 3)};
  ASSERT_THAT(WriteNpz(dir.File("a.npz"), in), IsOk());
  auto out = ReadNpz(dir.File("a.npz"));
  ASSERT_THAT(out, IsOk());
  ASSERT_EQ(out->size(), 3u);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ((*out)[i].name, in[i].name);
    EXPECT_EQ((*out)[i].dims, in[i].dims);
    EXPECT_EQ((*out)[i].dtype, in[i].dtype);
    ASSERT_EQ((*out)[i].data.size(), in[i].data.size());
    if (!in[i].data.empty()) {
      EXPECT_EQ(0, std::memcmp((*out)[i].data.data(), in[i].data.data(), in[i].data.size()));
    }
  }
}

TEST(NpzTest, WriterRejectsDuplicateAndPathNames) {
  TempDir dir;
  EXPECT_THAT(WriteNpz(dir.File("d.npz"), {Make("a", ir::DType::kU8, {1}, 1),
                                           Make("a", ir::DType::kU8, {1}, 2)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'a'")));
  EXPECT_THAT(WriteNpz(dir.File("d.npz"), {Make("x/../y", ir::DType::kU8, {1}, 1)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'x/../y'")));
  // Relative names with "/" are fine and come back unchanged.
  ASSERT_THAT(WriteNpz(dir.File("d.npz"), {Make("model/Add_output_0", ir::DType::kU8, {1}, 1)}),
              IsOk());
  auto back = ReadNpz(dir.File("d.npz"));
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ((*back)[0].name, "model/Add_output_0");
}

TEST(NpzTest, ReadNpyOrNpzDispatchesOnExtension) {
  TempDir dir;
  ASSERT_THAT(WriteNpy(dir.File("ids.npy"), Make("whatever", ir::DType::kI32, {3}, 4)), IsOk());
  auto one = ReadNpyOrNpz(dir.File("ids.npy"));
  ASSERT_THAT(one, IsOk());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].name, "ids");
  EXPECT_THAT(ReadNpyOrNpz(dir.File("ids.txt")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(".npy or .npz")));
}

struct BadNpz {
  const char* label;
  std::function<void(std::string&)> corrupt;
  absl::StatusCode code;
  const char* message;
};

// Offsets in the two-entry archive written below. The end record is
// followed by WriteNpz's archive comment.
size_t EndPos(const std::string& z) { return z.rfind(std::string("PK\x05\x06", 4)); }
size_t CdPos(const std::string& z) { return Get(z, EndPos(z) + 16, 4); }

std::vector<BadNpz> BadNpzCases() {
  return {
      {"too_small", [](std::string& z) { z.resize(10); }, absl::StatusCode::kInvalidArgument,
       "smaller than the 22-byte end record"},
      {"no_end_record", [](std::string& z) { z[EndPos(z)] = 'X'; },
       absl::StatusCode::kInvalidArgument, "no end-of-central-directory"},
      {"cd_past_end", [](std::string& z) { Set(z, EndPos(z) + 12, 0x7fffffff, 4); },
       absl::StatusCode::kOutOfRange, "central directory"},
      {"count_too_high",
       [](std::string& z) {
         Set(z, EndPos(z) + 8, 3, 2);
         Set(z, EndPos(z) + 10, 3, 2);
       },
       absl::StatusCode::kOutOfRange, "claims 3 entries"},
      {"count_too_low",
       [](std::string& z) {
         Set(z, EndPos(z) + 8, 1, 2);
         Set(z, EndPos(z) + 10, 1, 2);
       },
       absl::StatusCode::kInvalidArgument, "beyond its 1 entries"},
      {"multi_disk", [](std::string& z) { Set(z, EndPos(z) + 4, 1, 2); },
       absl::StatusCode::kUnimplemented, "multi-disk"},
      {"bad_cd_signature", [](std::string& z) { z[CdPos(z)] = 'X'; },
       absl::StatusCode::kInvalidArgument, "entry 0 at offset"},
      {"local_offset_past_cd", [](std::string& z) { Set(z, CdPos(z) + 42, 0x7ffffff0, 4); },
       absl::StatusCode::kOutOfRange, "local header offset"},
      {"bad_local_signature", [](std::string& z) { z[0] = 'X'; },
       absl::StatusCode::kInvalidArgument, "bad local header signature"},
      {"size_past_cd",
       [](std::string& z) {
         Set(z, CdPos(z) + 20, 0x100000, 4);
         Set(z, CdPos(z) + 24, 0x100000, 4);
       },
       absl::StatusCode::kOutOfRange, "runs into the central directory"},
      {"crc_mismatch", [](std::string& z) { z[CdPos(z) + 16] ^= 1; },
       absl::StatusCode::kDataLoss, "CRC-32"},
      {"payload_flipped", [](std::string& z) { z[200] ^= 0x55; },
       absl::StatusCode::kDataLoss, "CRC-32"},
      {"bzip2_method", [](std::string& z) { Set(z, CdPos(z) + 10, 12, 2); },
       absl::StatusCode::kUnimplemented, "compression method 12"},
      {"encrypted", [](std::string& z) { Set(z, CdPos(z) + 8, 1, 2); },
       absl::StatusCode::kUnimplemented, "encrypted"},
      {"name_disagrees_with_local", [](std::string& z) { z[CdPos(z) + 46 + 4] = 'x'; },
       absl::StatusCode::kInvalidArgument, "disagrees"},
      {"not_npy_name", [](std::string& z) { z[CdPos(z) + 46 + 8] = 'z'; },
       absl::StatusCode::kInvalidArgument, "'alpha.npz' is not '<name>.npy'"},
      {"parent_directory_name", [](std::string& z) { std::memcpy(&z[CdPos(z) + 46], "../a", 4); },
       absl::StatusCode::kInvalidArgument, "'../aa.npy' is not"},
      {"absolute_name", [](std::string& z) { z[CdPos(z) + 46] = '/'; },
       absl::StatusCode::kInvalidArgument, "'/lpha.npy' is not"},
      {"duplicate_name",
       [](std::string& z) {
         // Second central entry's name "bravo" -> "alpha".
         const size_t second = CdPos(z) + 46 + Get(z, CdPos(z) + 28, 2);
         std::memcpy(&z[second + 46], "alpha", 5);
       },
       absl::StatusCode::kInvalidArgument, "duplicate entry 'alpha.npy'"},
      {"stored_sizes_differ", [](std::string& z) { Set(z, CdPos(z) + 24, 10, 4); },
       absl::StatusCode::kInvalidArgument, "!= uncompressed size 10"},
      {"zip64_sentinel_without_extra", [](std::string& z) { Set(z, CdPos(z) + 20, 0xFFFFFFFF, 4); },
       absl::StatusCode::kInvalidArgument, "without a Zip64 extra"},
  };
}

TEST(NpzTest, RejectsEveryCorruptArchiveWithItsOwnError) {
  TempDir dir;
  ASSERT_THAT(WriteNpz(dir.File("good.npz"), {Make("alpha", ir::DType::kF32, {4, 8}, 5),
                                              Make("bravo", ir::DType::kI64, {3}, 6)}),
              IsOk());
  const std::string good = ReadWholeFile(dir.File("good.npz"));
  ASSERT_THAT(ReadNpz(dir.File("good.npz")), IsOk());
  for (const BadNpz& c : BadNpzCases()) {
    SCOPED_TRACE(c.label);
    std::string z = good;
    c.corrupt(z);
    const std::string path = dir.File(std::string(c.label) + ".npz");
    WriteFile(path, z);
    auto r = ReadNpz(path);
    EXPECT_THAT(r, StatusIs(c.code, HasSubstr(c.message)));
    if (!r.ok()) {
      EXPECT_THAT(std::string(r.status().message()), HasSubstr(path));
    }
  }
}

}  // namespace
}  // namespace slimpack::numpy
