// The memory budget .npz inflation is capped by (numpy_io.h
// NpzInflateBudget): the environment override, else the least of physical
// memory, MemAvailable and what the cgroup limit leaves.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "formats/numpy/numpy_io.h"

namespace slimpack::numpy {
namespace {

// The first number in `text`, or 0.
uint64_t LeadingNumber(const std::string& text) {
  return std::strtoull(text.c_str(), nullptr, 10);
}

std::string ReadProcFile(const char* path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// MemAvailable of /proc/meminfo in bytes, or 0.
uint64_t MemAvailable() {
  const std::string info = ReadProcFile("/proc/meminfo");
  const size_t pos = info.find("MemAvailable:");
  if (pos == std::string::npos) return 0;
  return LeadingNumber(info.substr(pos + 13)) * 1024;
}

}  // namespace

NpzInflateBudget DefaultNpzInflateBudget() {
  if (const char* env = std::getenv("SLIMPACK_NPZ_MAX_INFLATE_BYTES")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) {
      return {v, "$SLIMPACK_NPZ_MAX_INFLATE_BYTES"};
    }
  }
  NpzInflateBudget b;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  b.bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                  : UINT64_MAX;
  b.source = "physical memory";
  if (const uint64_t avail = MemAvailable(); avail > 0 && avail < b.bytes) {
    b.bytes = avail;
    b.source = "memory available now, MemAvailable in /proc/meminfo";
  }
  const std::string max = ReadProcFile("/sys/fs/cgroup/memory.max");
  if (!max.empty() && max.compare(0, 3, "max") != 0) {
    const uint64_t limit = LeadingNumber(max);
    const uint64_t used = LeadingNumber(ReadProcFile("/sys/fs/cgroup/memory.current"));
    const uint64_t left = limit > used ? limit - used : 0;
    if (limit > 0 && left < b.bytes) {
      b.bytes = left;
      b.source = "memory left under the cgroup limit, /sys/fs/cgroup/memory.max";
    }
  }
  b.source += "; set SLIMPACK_NPZ_MAX_INFLATE_BYTES to change it";
  return b;
}

}  // namespace slimpack::numpy
