#include "formats/numpy/npz_zip.h"

#include <zlib.h>

#include <algorithm>

namespace slimpack::numpy::zip {

bool IsSafeEntryName(const std::string& stem) {
  if (stem.empty() || stem.find('\\') != std::string::npos ||
      stem.find('\0') != std::string::npos) {
    return false;
  }
  size_t start = 0;
  while (true) {
    const size_t slash = stem.find('/', start);
    const std::string part = stem.substr(start, slash == std::string::npos ? slash : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}


uint64_t Le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t Crc32(const uint8_t* p, uint64_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<uint64_t>(n, 1u << 30));
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return crc;
}

}  // namespace slimpack::numpy::zip
