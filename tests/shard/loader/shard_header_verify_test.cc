// Issue 16 item 6: Verify() must refuse every shard header that mapping the
// shard refuses, even when the broken shard has been re-hashed into the
// manifest (so the SHA-256 check alone passes). One case per header field;
// each asserts that Open succeeds, Verify fails with the field's error, and
// loading a tensor of that shard fails with the same code and message
// (both go through CheckShardHeader).
#include <cstring>
#include <functional>
#include <string>

#include "formats/shard/format.h"
#include "formats/shard/loader/artifact.h"
#include "formats/shard/loader/shard_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shard/loader/loader_matchers.h"
#include "tests/shard/loader/sample_artifacts.h"
#include "tests/shard/loader/test_artifact_writer.h"

namespace slimpack::loader {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;
using testing::TestArtifact;

void PutLe(std::string& bytes, size_t offset, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) {
    bytes[offset + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
  }
}

struct HeaderCase {
  const char* name;
  int shard;  // 0 holds tensor a (kA), 1 holds tensor d (kD)
  std::function<void(std::string&)> edit;
  StatusCode code;
  const char* message;
};

void PrintTo(const HeaderCase& c, std::ostream* os) { *os << c.name; }

using shard::ShardHeader;

const HeaderCase kHeaderCases[] = {
    {"BadMagic", 0, [](std::string& b) { b[0] = 'X'; }, StatusCode::kInvalidArgument,
     "shard-00000.bin: bad magic: not a slimpack shard"},
    {"VersionMajorZero", 1,
     [](std::string& b) { PutLe(b, offsetof(ShardHeader, version_major), 0, 2); },
     StatusCode::kInvalidArgument, "shard-00001.bin: shard version 0 does not exist"},
    {"VersionMajorNewer", 1,
     [](std::string& b) { PutLe(b, offsetof(ShardHeader, version_major), 2, 2); },
     StatusCode::kUnimplemented,
     "shard-00001.bin: shard format major version 2 was made by a newer tool"},
    {"HeaderSizeTooSmall", 0,
     [](std::string& b) { PutLe(b, offsetof(ShardHeader, header_size), 32, 4); },
     StatusCode::kInvalidArgument, "shard-00000.bin: header_size 32 outside [64, 16384]"},
    {"HeaderSizePastDataRegion", 1,
     [](std::string& b) { PutLe(b, offsetof(ShardHeader, header_size), 20000, 4); },
     StatusCode::kInvalidArgument, "shard-00001.bin: header_size 20000 outside [64, 16384]"},
    {"WrongShardIndex", 1,
     [](std::string& b) { PutLe(b, offsetof(ShardHeader, shard_index), 0, 4); },
     StatusCode::kInvalidArgument,
     "shard-00001.bin: header says shard index 0, manifest says 1"},
    {"WrongFileSize", 0,
     [](std::string& b) { PutLe(b, offsetof(ShardHeader, file_size), 99999, 8); },
     StatusCode::kInvalidArgument,
     "shard-00000.bin: header says file size 99999, manifest says 16704"},
    {"ReservedWordNotZero", 0,
     [](std::string& b) { PutLe(b, offsetof(ShardHeader, reserved0), 1, 4); },
     StatusCode::kInvalidArgument, "shard-00000.bin: reserved header bytes are not zero"},
    {"ReservedTailNotZero", 1, [](std::string& b) { b[63] = 7; },
     StatusCode::kInvalidArgument, "shard-00001.bin: reserved header byte 63 is not zero"},
};

class ShardHeaderVerifyTest : public ::testing::TestWithParam<HeaderCase> {};

TEST_P(ShardHeaderVerifyTest, VerifyRefusesWhatLoadingRefuses) {
  const HeaderCase& c = GetParam();
  testing::TempDir dir;
  TestArtifact art = TestArtifact::Build(testing::SampleSpec());
  c.edit(art.shard_bytes[c.shard]);
  art.RehashShards();  // the hash check alone would now pass
  ASSERT_THAT(art.Write(dir.path()), IsOk());

  auto opened = Artifact::Open(dir.path());
  ASSERT_THAT(opened, IsOk()) << "open must not touch shards";
  Artifact& a = **opened;
  const Status verified = a.Verify();
  EXPECT_THAT(verified, StatusIs(c.code, HasSubstr(c.message)));
  EXPECT_THAT(a.VerifyShard(static_cast<size_t>(c.shard)),
              StatusIs(c.code, HasSubstr(c.message)));
  // The other shard is intact and still verifies on its own.
  EXPECT_THAT(a.VerifyShard(static_cast<size_t>(1 - c.shard)), IsOk());

  auto loaded = a.GetTensor(c.shard == 0 ? testing::kA : testing::kD);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), verified.code());
  EXPECT_THAT(loaded.status().message(), HasSubstr(verified.message()));
}

INSTANTIATE_TEST_SUITE_P(EveryHeaderField, ShardHeaderVerifyTest,
                         ::testing::ValuesIn(kHeaderCases),
                         [](const auto& info) { return std::string(info.param.name); });

// A header the spec allows (a larger header_size, as a later minor version
// may write, and a newer minor version) verifies and loads: the shared check
// is not stricter than the loader.
TEST(ShardHeaderVerifyBaselineTest, LargerHeaderSizeAndNewerMinorVerify) {
  testing::TempDir dir;
  TestArtifact art = TestArtifact::Build(testing::SampleSpec());
  PutLe(art.shard_bytes[0], offsetof(ShardHeader, header_size), 128, 4);
  PutLe(art.shard_bytes[0], offsetof(ShardHeader, version_minor), 3, 2);
  art.RehashShards();
  ASSERT_THAT(art.Write(dir.path()), IsOk());
  auto opened = Artifact::Open(dir.path());
  ASSERT_THAT(opened, IsOk());
  EXPECT_THAT((*opened)->Verify(), IsOk());
  EXPECT_THAT((*opened)->GetTensor(testing::kA), IsOk());
}

// The exposed check on its own, on a header built from format.h.
TEST(CheckShardHeaderTest, AcceptsTheWritersHeaderAndNamesThePath) {
  ShardHeader h{};
  std::memcpy(h.magic, shard::kShardMagic, sizeof(h.magic));
  h.version_major = shard::kFormatVersionMajor;
  h.version_minor = shard::kFormatVersionMinor;
  h.header_size = shard::kShardHeaderSize;
  h.shard_index = 3;
  h.file_size = 20480;
  uint8_t bytes[sizeof(ShardHeader)];
  std::memcpy(bytes, &h, sizeof(h));  // little-endian hosts (x86-64, arm64)
  ShardInfo info;
  info.index = 3;
  info.size = 20480;
  EXPECT_THAT(CheckShardHeader(bytes, info, "dir/shard-00003.bin"), IsOk());
  info.index = 4;
  EXPECT_THAT(CheckShardHeader(bytes, info, "dir/shard-00003.bin"),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("dir/shard-00003.bin: header says shard index 3, "
                                 "manifest says 4")));
}

}  // namespace
}  // namespace slimpack::loader
