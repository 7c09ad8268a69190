#include "fuzz/fuzz_temp_dir.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <mutex>
#include <set>

namespace slimpack::fuzz {
namespace {

struct Scratch {
  std::string dir;
  std::set<std::string> files;
};

Scratch& TheScratch() {
  static Scratch* scratch = new Scratch;  // never destroyed: atexit reads it
  return *scratch;
}

void RemoveScratch() {
  Scratch& s = TheScratch();
  // Harnesses may make directories inside it (merge: one per part).
  std::error_code ec;
  if (!s.dir.empty()) std::filesystem::remove_all(s.dir, ec);
}

const std::string& ScratchDir() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                        "/slimpack-fuzz-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      std::perror(templ.c_str());
      std::abort();
    }
    TheScratch().dir = templ;
    std::atexit(RemoveScratch);
  });
  return TheScratch().dir;
}

}  // namespace

std::string WriteScratchFile(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = ScratchDir() + "/" + name;
  TheScratch().files.insert(name);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) ||
      std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace slimpack::fuzz
