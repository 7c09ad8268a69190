// SHA-256 (FIPS 180-4) for shard, carried-file and manifest integrity checks,
// so the loader needs no crypto library.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_SHA256_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace slimpack::loader {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  // Finishes the hash; the object must not be updated afterwards.
  Digest Final();

  static Digest Hash(const void* data, size_t size);
  // 64 lowercase hex digits.
  static std::string ToHex(const Digest& d);
  static std::string HashHex(std::string_view s) {
    return ToHex(Hash(s.data(), s.size()));
  }

 private:
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Which block function Sha256 uses on this CPU: "scalar", "x86-sha-ni" or
// "arm64-sha2". For logs and benchmarks.
const char* Sha256Implementation();

namespace internal {
// Compresses `blocks` 64-byte blocks into `state`, using the scalar code
// regardless of CPU (tests compare the accelerated path against it).
void Sha256BlocksScalar(uint32_t state[8], const uint8_t* data, size_t blocks);
}  // namespace internal

}  // namespace slimpack::loader

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_SHA256_H_
