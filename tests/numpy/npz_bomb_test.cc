// Issue 16 item 3 (zip bomb): a small .npz whose deflated entries declare
// gigabytes. Archives are built here with zlib (nothing big is committed);
// each must be refused from its declared sizes and .npy header, before the
// data is allocated or inflated, with a message naming the archive, the
// entry, the declared size and the limit. Also: inflation never runs past
// the declared size, the budget counts earlier entries, and the archive
// comment WriteNpz stores marks our own outputs.
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "formats/numpy/numpy_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/safetensors/test_files.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::numpy {
namespace {

using ::slimpack::safetensors::testing::TempDir;
using ::slimpack::safetensors::testing::WriteFile;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

void Put(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A version 1.0 .npy header for `dict`, padded so data starts at 64 * k.
std::string NpyHeader(const std::string& dict) {
  std::string d = dict;
  const size_t total = (10 + d.size() + 1 + 63) / 64 * 64;
  d.append(total - 10 - d.size() - 1, ' ');
  d.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  Put(out, d.size(), 2);
  return out + d;
}

// An u8 array of `n` elements: header + data (0, 1, 2, ...).
std::string U8Npy(uint64_t n) {
  std::string out =
      NpyHeader("{'descr': '|u1', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }");
  for (uint64_t i = 0; i < n; ++i) out.push_back(static_cast<char>(i));
  return out;
}

// Raw deflate (no zlib header), as zip stores it.
std::string Deflate(const std::string& bytes) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, bytes.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

uint32_t Crc(const std::string& bytes) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

// One zip entry as written: `payload` is stored as is, and the sizes and
// CRC are whatever the test declares (they may lie).
struct ZipEntry {
  std::string name;
  std::string payload;
  uint32_t crc = 0;
  uint64_t declared = 0;  // uncompressed size in both headers
  uint16_t method = 8;    // deflate
};

std::string Zip(const std::vector<ZipEntry>& entries) {
  std::string out, central;
  for (const ZipEntry& e : entries) {
    auto common = [&](std::string& s) {
      Put(s, 20, 2);  // version needed
      Put(s, 0, 2);   // flags
      Put(s, e.method, 2);
      Put(s, 0, 2);     // time
      Put(s, 0x21, 2);  // date
      Put(s, e.crc, 4);
      Put(s, e.payload.size(), 4);
      Put(s, e.declared, 4);
      Put(s, e.name.size(), 2);
      Put(s, 0, 2);  // extra
    };
    Put(central, 0x02014b50, 4);
    Put(central, 20, 2);  // version made by
    common(central);
    Put(central, 0, 2);  // comment
    Put(central, 0, 2);  // disk
    Put(central, 0, 2);  // internal attributes
    Put(central, 0, 4);  // external attributes
    Put(central, out.size(), 4);
    central += e.name;
    Put(out, 0x04034b50, 4);
    common(out);
    out += e.name;
    out += e.payload;
  }
  const uint64_t cd_offset = out.size();
  out += central;
  Put(out, 0x06054b50, 4);
  Put(out, 0, 2);
  Put(out, 0, 2);
  Put(out, entries.size(), 2);
  Put(out, entries.size(), 2);
  Put(out, central.size(), 4);
  Put(out, cd_offset, 4);
  Put(out, 0, 2);
  return out;
}

// A well-formed deflated entry holding `npy`.
ZipEntry Deflated(const std::string& name, const std::string& npy) {
  return {name, Deflate(npy), Crc(npy), npy.size()};
}

NpzReadOptions Budget(uint64_t bytes) {
  NpzReadOptions o;
  o.max_inflated_bytes = bytes;
  return o;
}

constexpr uint64_t kGiga = 1000000000;

TEST(NpzBombTest, WellFormedDeflatedEntryReadsBack) {
  TempDir dir;
  const std::string npy = U8Npy(40);
  WriteFile(dir.File("ok.npz"), Zip({Deflated("x.npy", npy)}));
  auto r = ReadNpz(dir.File("ok.npz"), Budget(1 << 20));
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].name, "x");
  EXPECT_EQ((*r)[0].dims, std::vector<int64_t>{40});
  ASSERT_EQ((*r)[0].data.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ((*r)[0].data.data()[i], i);
}

// The declared size says 1 GB, the entry's own .npy header 168 bytes: the
// header is inflated alone and the entry refused; the 1 GB is never
// allocated. Garbage after the stream lets the declared ratio pass the
// deflate-ratio check, so only the header comparison can catch it.
TEST(NpzBombTest, DeclaredSizeThatDisagreesWithTheHeaderIsRefused) {
  TempDir dir;
  const std::string npy = U8Npy(40);
  ZipEntry e = Deflated("x.npy", npy);
  e.payload += std::string(1 << 20, 'G');
  e.declared = kGiga;
  const std::string path = dir.File("bomb.npz");
  WriteFile(path, Zip({e}));
  EXPECT_THAT(ReadNpz(path, Budget(2 * kGiga)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path + ": entry 'x.npy'"),
                             HasSubstr("declares 1000000000 uncompressed bytes"),
                             HasSubstr("shape [40] of |u1"),
                             HasSubstr("describes " + std::to_string(npy.size())))));
}

// A header that agrees with a 1 GB declared size, over a 64 MiB budget:
// refused from the declared sizes before a byte is inflated (the payload
// is not even a deflate stream).
TEST(NpzBombTest, EntryOverTheBudgetIsRefusedBeforeInflating) {
  TempDir dir;
  ZipEntry e;
  e.name = "big.npy";
  e.payload = std::string(1 << 20, 'G');
  e.declared = kGiga + 128;
  const std::string path = dir.File("big.npz");
  WriteFile(path, Zip({e}));
  EXPECT_THAT(ReadNpz(path, Budget(64 << 20)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr(path + ": entry 'big.npy'"),
                             HasSubstr("declares 1000000128 uncompressed bytes"),
                             HasSubstr("limit of 67108864 bytes"))));
}

// The budget is for the whole archive: the second entry is refused.
TEST(NpzBombTest, BudgetCountsEarlierEntries) {
  TempDir dir;
  const std::string npy = U8Npy(40);
  const std::string path = dir.File("two.npz");
  WriteFile(path, Zip({Deflated("a.npy", npy), Deflated("b.npy", npy)}));
  EXPECT_THAT(ReadNpz(path, Budget(2 * npy.size())), IsOk());
  EXPECT_THAT(ReadNpz(path, Budget(2 * npy.size() - 1)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("entry 'b.npy'"),
                             HasSubstr("after " + std::to_string(npy.size()) +
                                       " bytes of earlier entries"))));
}

// A stream that inflates to more than declared is refused without
// inflating the excess; one that ends early is refused too.
TEST(NpzBombTest, InflationStopsAtTheDeclaredSize) {
  TempDir dir;
  const std::string npy = U8Npy(40);
  ZipEntry longer = Deflated("x.npy", npy + std::string(1 << 20, '\0'));
  longer.declared = npy.size();
  longer.crc = Crc(npy);
  WriteFile(dir.File("longer.npz"), Zip({longer}));
  EXPECT_THAT(ReadNpz(dir.File("longer.npz"), Budget(1 << 30)),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("entry 'x.npy'"),
                             HasSubstr("holds more than the declared size"))));

  ZipEntry shorter = Deflated("x.npy", npy.substr(0, npy.size() - 10));
  shorter.declared = npy.size();
  shorter.crc = Crc(npy);
  WriteFile(dir.File("shorter.npz"), Zip({shorter}));
  EXPECT_THAT(ReadNpz(dir.File("shorter.npz"), Budget(1 << 30)),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("entry 'x.npy'"), HasSubstr("ends early"))));
}

// The default budget can be set from the environment, and the refusal
// says where the limit came from.
TEST(NpzBombTest, DefaultBudgetFromTheEnvironment) {
  TempDir dir;
  const std::string npy = U8Npy(40);
  WriteFile(dir.File("ok.npz"), Zip({Deflated("x.npy", npy)}));
  ASSERT_EQ(::setenv("SLIMPACK_NPZ_MAX_INFLATE_BYTES", "100", 1), 0);
  const NpzInflateBudget b = DefaultNpzInflateBudget();
  auto r = ReadNpz(dir.File("ok.npz"));
  ::unsetenv("SLIMPACK_NPZ_MAX_INFLATE_BYTES");
  EXPECT_EQ(b.bytes, 100u);
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kResourceExhausted,
                          AllOf(HasSubstr("limit of 100 bytes"),
                                HasSubstr("SLIMPACK_NPZ_MAX_INFLATE_BYTES"))));
  // Without it: some memory figure, and the same archive reads.
  const NpzInflateBudget def = DefaultNpzInflateBudget();
  EXPECT_GT(def.bytes, 0u);
  EXPECT_THAT(def.source, HasSubstr("SLIMPACK_NPZ_MAX_INFLATE_BYTES"));
  EXPECT_THAT(ReadNpz(dir.File("ok.npz")), IsOk());
}

TEST(NpzWriterMarkTest, OnlyOurArchivesCarryTheComment) {
  TempDir dir;
  ir::Tensor t;
  t.name = "y";
  t.dtype = ir::DType::kU8;
  t.dims = {3};
  t.data = ir::TensorData::Owned(std::vector<uint8_t>{1, 2, 3});
  ASSERT_THAT(WriteNpz(dir.File("ours.npz"), {t}), IsOk());
  EXPECT_TRUE(IsNpzWrittenBySlimpack(dir.File("ours.npz")));
  EXPECT_THAT(ReadNpz(dir.File("ours.npz")), IsOk());
  WriteFile(dir.File("theirs.npz"), Zip({Deflated("x.npy", U8Npy(4))}));
  EXPECT_FALSE(IsNpzWrittenBySlimpack(dir.File("theirs.npz")));
  WriteFile(dir.File("short"), "PK");
  EXPECT_FALSE(IsNpzWrittenBySlimpack(dir.File("short")));
  EXPECT_FALSE(IsNpzWrittenBySlimpack(dir.File("missing.npz")));
}

}  // namespace
}  // namespace slimpack::numpy
