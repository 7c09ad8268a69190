// llama.cpp's imatrix file reader: the committed llama-imatrix output read
// field by field, and hostile variants of it refused with the entry, the
// field and the offset (the file is untrusted input: every count is checked
// before anything is allocated or read).
#include "formats/gguf/imatrix_file.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::HasSubstr;

const std::string kFile = std::string(SLIMPACK_GGUF_TESTDATA_DIR) + "/imatrix/tiny_llama.imatrix";

std::vector<uint8_t> Bytes() {
  std::ifstream in(kFile, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

absl::StatusOr<ImatrixFile> Parse(const std::vector<uint8_t>& b) {
  return ParseImatrix(b.data(), b.size(), "x.imatrix");
}

void PutI32(std::vector<uint8_t>& b, size_t at, int32_t v) { std::memcpy(&b[at], &v, 4); }
void PutF32(std::vector<uint8_t>& b, size_t at, float v) { std::memcpy(&b[at], &v, 4); }

// Offsets in the committed file: n_entries, then entry 1's name length,
// name, ncall, nval, values.
struct FirstEntry {
  size_t name_len = 4, name = 8, ncall, nval, values;
  int32_t len;
};
FirstEntry Layout(const std::vector<uint8_t>& b) {
  FirstEntry e;
  std::memcpy(&e.len, &b[4], 4);
  e.ncall = e.name + static_cast<size_t>(e.len);
  e.nval = e.ncall + 4;
  e.values = e.nval + 4;
  return e;
}

TEST(ImatrixFileTest, ReadsLlamaImatrixOutput) {
  auto f = ReadImatrixFile(kFile);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->entries.size(), 29u);
  EXPECT_EQ(f->last_call, 62);
  EXPECT_EQ(f->dataset, "calib.txt");
  int checked = 0;
  for (const auto& [name, e] : f->entries) {
    EXPECT_EQ(e.ncall, 62) << name;
    const bool down = name.find("ffn_down") != std::string::npos;
    EXPECT_EQ(e.values.size(), down ? 344u : 128u) << name;
    // Mean squares are divided by the call count, as llama-quantize does.
    const std::vector<float> m = MeanSquares(e);
    ASSERT_EQ(m.size(), e.values.size());
    EXPECT_EQ(m[0], e.values[0] / 62.0f) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 29);
  EXPECT_EQ(f->entries.count("blk.0.attn_q.weight"), 1u);
  EXPECT_EQ(f->entries.count("output.weight"), 1u);
}

TEST(ImatrixFileTest, WithoutTheTrailerStillReads) {
  // Older llama-imatrix versions end after the last entry.
  std::vector<uint8_t> b = Bytes();
  const size_t trailer = 4 + 4 + std::strlen("calib.txt");
  b.resize(b.size() - trailer);
  auto f = Parse(b);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->entries.size(), 29u);
  EXPECT_EQ(f->last_call, 0);
  EXPECT_EQ(f->dataset, "");
}

TEST(ImatrixFileTest, EveryTruncationIsRefused) {
  const std::vector<uint8_t> full = Bytes();
  const size_t entries_end = full.size() - (4 + 4 + std::strlen("calib.txt"));
  int refused = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    if (n == entries_end) continue;  // the trailer-less layout above
    std::vector<uint8_t> b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    auto f = Parse(b);
    ASSERT_FALSE(f.ok()) << "prefix of " << n << " bytes";
    EXPECT_THAT(f.status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x.imatrix")));
    ++refused;
  }
  EXPECT_EQ(refused, static_cast<int>(full.size()) - 1);
}

TEST(ImatrixFileTest, HostileCountsAndValuesAreNamed) {
  const std::vector<uint8_t> good = Bytes();
  const FirstEntry e = Layout(good);
  struct Case {
    const char* what;
    std::function<void(std::vector<uint8_t>&)> edit;
    const char* message;
  };
  const Case cases[] = {
      {"zero entries", [](auto& b) { PutI32(b, 0, 0); }, "entry count 0"},
      {"2^31-1 entries", [](auto& b) { PutI32(b, 0, std::numeric_limits<int32_t>::max()); },
       "entry count 2147483647 is impossible"},
      {"negative name length", [&](auto& b) { PutI32(b, e.name_len, -5); }, "name length -5"},
      {"huge name length", [&](auto& b) { PutI32(b, e.name_len, 1 << 30); },
       "name length 1073741824"},
      {"negative ncall", [&](auto& b) { PutI32(b, e.ncall, -1); }, "negative call count -1"},
      {"zero nval", [&](auto& b) { PutI32(b, e.nval, 0); }, "value count 0 < 1"},
      {"nval past the end", [&](auto& b) { PutI32(b, e.nval, 1 << 28); }, "truncated"},
      {"NaN value",
       [&](auto& b) { PutF32(b, e.values + 8, std::numeric_limits<float>::quiet_NaN()); },
       "value 2 is nan"},
      {"negative value", [&](auto& b) { PutF32(b, e.values, -1.0f); }, "value 0 is -1"},
      {"infinite value",
       [&](auto& b) { PutF32(b, e.values + 4, std::numeric_limits<float>::infinity()); },
       "value 1 is inf"},
      {"NUL in the name", [&](auto& b) { b[e.name + 1] = 0; }, "NUL byte"},
      {"trailing bytes", [](auto& b) { b.push_back(7); }, "1 bytes after the dataset name"},
      {"GGUF container", [](auto& b) { std::memcpy(b.data(), "GGUF", 4); }, "--output-format dat"},
  };
  int checked = 0;
  for (const Case& c : cases) {
    std::vector<uint8_t> b = good;
    c.edit(b);
    auto f = Parse(b);
    ASSERT_FALSE(f.ok()) << c.what;
    EXPECT_THAT(f.status().message(), HasSubstr(c.message)) << c.what;
    EXPECT_THAT(f.status().message(), HasSubstr("x.imatrix")) << c.what;
    ++checked;
  }
  EXPECT_EQ(checked, 13);
}

TEST(ImatrixFileTest, ADuplicateNameIsRefused) {
  // Two copies of the first entry under one entry count.
  const std::vector<uint8_t> good = Bytes();
  const FirstEntry e = Layout(good);
  int32_t nval = 0;
  std::memcpy(&nval, &good[e.nval], 4);
  const size_t entry_bytes = e.values + 4 * static_cast<size_t>(nval) - e.name_len;
  std::vector<uint8_t> b;
  b.resize(4);
  PutI32(b, 0, 2);
  for (int i = 0; i < 2; ++i) {
    b.insert(b.end(), good.begin() + static_cast<std::ptrdiff_t>(e.name_len),
             good.begin() + static_cast<std::ptrdiff_t>(e.name_len + entry_bytes));
  }
  auto f = Parse(b);
  EXPECT_THAT(f.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("entry 2 of 2")));
  EXPECT_THAT(f.status().message(), HasSubstr("appears twice"));
}

TEST(ImatrixFileTest, MissingFileNamesThePath) {
  auto f = ReadImatrixFile("/nonexistent/x.imatrix");
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("/nonexistent/x.imatrix"));
}

}  // namespace
}  // namespace slimpack::gguf
