// The normal test suite's driver for a libFuzzer harness: runs
// LLVMFuzzerTestOneInput once on every regular file of each directory given
// (the committed corpus and regression inputs), in name order, and fails if
// a directory is missing, unreadable or holds no input, so the test cannot
// pass by shrinking to nothing. A crash is the sanitizers' or the process's
// own failure; the harness returns 0 for every input the parser refuses.
//   fuzz_replay_<parser> DIR...
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// Regular files of `dir`, sorted; false if `dir` cannot be listed.
bool ListFiles(const std::string& dir, std::vector<std::string>* out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  while (const dirent* e = ::readdir(d)) {
    const std::string path = dir + "/" + e->d_name;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out->push_back(path);
  }
  ::closedir(d);
  std::sort(out->begin(), out->end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR...\n", argv[0]);
    return 2;
  }
  size_t total = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::string> files;
    if (!ListFiles(argv[i], &files)) {
      std::perror(argv[i]);
      return 1;
    }
    if (files.empty()) {
      std::fprintf(stderr, "%s: no input files (an empty corpus or regression directory "
                           "would make this test pass without running anything)\n", argv[i]);
      return 1;
    }
    for (const std::string& path : files) {
      std::ifstream in(path, std::ios::binary);
      const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) {
        std::fprintf(stderr, "%s: read error\n", path.c_str());
        return 1;
      }
      std::fprintf(stderr, "%s (%zu bytes)\n", path.c_str(), bytes.size());
      // A copy of exactly `size` bytes, so reads past the end are heap
      // overflows to ASan, as under libFuzzer.
      std::vector<uint8_t> data(bytes.begin(), bytes.end());
      LLVMFuzzerTestOneInput(data.empty() ? nullptr : data.data(), data.size());
    }
    std::fprintf(stderr, "%s: %zu inputs\n", argv[i], files.size());
    total += files.size();
  }
  std::printf("replayed %zu inputs, no crash\n", total);
  return 0;
}
