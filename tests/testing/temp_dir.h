// A fresh directory under $TMPDIR (or /tmp) for one test, removed with its
// contents when the object dies. Header-only and free of gtest so loader
// tests, fuzz drivers and benches can use it too; a directory that cannot be
// created aborts the process (no test can go on without it).
#ifndef SLIMPACK_TESTS_TESTING_TEMP_DIR_H_
#define SLIMPACK_TESTS_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace slimpack::testing {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/slimpack_test.XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::perror(("mkdtemp " + tmpl).c_str());
      std::abort();
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace slimpack::testing

#endif  // SLIMPACK_TESTS_TESTING_TEMP_DIR_H_
