// InputPages drops pages of mapped input files only: the data stays
// readable (re-faulted from the file) and other memory is never touched.
#include "support/input_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fstream>

#include "gtest/gtest.h"
#include "support/mapped_file.h"
#include "tests/testing/temp_dir.h"

namespace slimpack::support {
namespace {

using ::slimpack::testing::TempDir;

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << "writing " << path;
}

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 31 + 7);
  return s;
}

// Resident bytes of this process (/proc/self/statm), file pages included.
uint64_t ResidentBytes() {
  unsigned long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f) {
    if (std::fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<uint64_t>(resident) * ::sysconf(_SC_PAGESIZE);
}

// An 8 MiB file of Pattern bytes (bytes_) at path_, mapped (file_).
class InputPagesMappedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("input.bin");
    WriteFile(path_, bytes_);
    auto file = MappedFile::Open(path_);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    file_ = std::move(*file);
  }
  TempDir dir_;
  const std::string bytes_ = Pattern(8 << 20);
  std::string path_;
  std::shared_ptr<MappedFile> file_;
};

TEST_F(InputPagesMappedTest, ReleasedFilePagesLeaveRssAndReadBackUnchanged) {
  const InputPages pages = InputPages::Snapshot({path_});
  EXPECT_EQ(pages.mapping_count(), 1u);
  const uint8_t* data = file_->data();
  ASSERT_EQ(0, std::memcmp(data, bytes_.data(), bytes_.size()));  // fault in
  const uint64_t before = ResidentBytes();
  pages.Release(data + 100, bytes_.size() - 200);
  const uint64_t after = ResidentBytes();
  EXPECT_GE(static_cast<int64_t>(before) - static_cast<int64_t>(after),
            int64_t{6} << 20)
      << "resident before " << before << ", after " << after;
  EXPECT_EQ(0, std::memcmp(data, bytes_.data(), bytes_.size()));
}

// PrefaultRead maps a file range's pages in without reading them through
// faults: resident bytes grow by the range before any byte is read (on a
// kernel that has MADV_POPULATE_READ; an older one refuses the advice with
// EINVAL and nothing changes), and the bytes read back unchanged.
TEST_F(InputPagesMappedTest, PrefaultReadMapsPagesInAtOnce) {
  const uint8_t* data = file_->data();
  const uint64_t before = ResidentBytes();
  PrefaultRead(data + 100, bytes_.size() - 200);
  const uint64_t after = ResidentBytes();
  if (::madvise(const_cast<uint8_t*>(data), 4096, MADV_POPULATE_READ) == 0) {
    EXPECT_GE(after - before, uint64_t{7} << 20) << "before " << before << ", after " << after;
  } else {
    EXPECT_EQ(errno, EINVAL);
  }
  EXPECT_EQ(0, std::memcmp(data, bytes_.data(), bytes_.size()));
}

// Copy reads a mapped range through its file: the bytes are the mapping's,
// the mapping's pages stay out of the process's memory (a memcpy would
// fault 5 MiB of them in), copies of the snapshot keep the file open after
// the original is gone, and memory that is no input file's is memcpy'd.
TEST_F(InputPagesMappedTest, CopyReadsThroughTheFileWithoutTouchingTheMapping) {
  std::vector<uint8_t> dst(5 << 20, 0);
  std::memset(dst.data(), 1, dst.size());  // resident before measuring
  std::unique_ptr<InputPages> first =
      std::make_unique<InputPages>(InputPages::Snapshot({path_}));
  const InputPages pages = *first;
  first.reset();
  const uint64_t before = ResidentBytes();
  pages.Copy(file_->data() + 12345, dst.size(), dst.data());
  const uint64_t after = ResidentBytes();
  EXPECT_EQ(0, std::memcmp(dst.data(), bytes_.data() + 12345, dst.size()));
  EXPECT_LT(static_cast<int64_t>(after) - static_cast<int64_t>(before), int64_t{1} << 20)
      << "resident before " << before << ", after " << after;
  std::vector<uint8_t> heap(1 << 16);
  for (size_t i = 0; i < heap.size(); ++i) heap[i] = static_cast<uint8_t>(i * 7);
  std::vector<uint8_t> out(heap.size());
  pages.Copy(heap.data(), heap.size(), out.data());
  EXPECT_EQ(out, heap);
}

TEST(InputPagesTest, NeverTouchesHeapOrOtherFiles) {
  TempDir dir;
  const std::string input = dir.File("input.bin");
  const std::string other = dir.File("other.bin");
  WriteFile(input, Pattern(1 << 20));
  WriteFile(other, Pattern(1 << 20));
  auto other_map = MappedFile::Open(other);
  ASSERT_TRUE(other_map.ok());
  const InputPages pages = InputPages::Snapshot({input});
  EXPECT_EQ(pages.mapping_count(), 0u);  // input.bin is not mapped
  std::vector<uint8_t> heap(4 << 20, 0xAB);
  pages.Release(heap.data(), heap.size());
  for (size_t i = 0; i < heap.size(); i += 4096) ASSERT_EQ(heap[i], 0xAB);
  pages.Release((*other_map)->data(), (*other_map)->size());
  EXPECT_EQ(0, std::memcmp((*other_map)->data(), Pattern(1 << 20).data(), 1 << 20));
}

}  // namespace
}  // namespace slimpack::support
