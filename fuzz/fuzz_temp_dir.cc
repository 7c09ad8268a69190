#include "fuzz/fuzz_temp_dir.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
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
  for (const std::string& f : s.files) ::unlink((s.dir + "/" + f).c_str());
  if (!s.dir.empty()) ::rmdir(s.dir.c_str());
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
