// SHA-256: FIPS 180-4 test vectors, streaming in odd-sized pieces, and the
// hardware block function (when the CPU has one) against the scalar one.
#include "formats/shard/loader/sha256.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/shard/loader/test_artifact_writer.h"

namespace slimpack::loader {
namespace {

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256::HashHex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::HashHex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::HashHex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256::HashHex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, StreamingMatchesOneShot) {
  const std::vector<uint8_t> data = testing::PatternBytes(10007, 3);
  const std::string whole = Sha256::ToHex(Sha256::Hash(data.data(), data.size()));
  for (size_t piece : {1u, 7u, 63u, 64u, 65u, 1000u}) {
    Sha256 h;
    for (size_t i = 0; i < data.size(); i += piece) {
      h.Update(data.data() + i, std::min(piece, data.size() - i));
    }
    EXPECT_EQ(Sha256::ToHex(h.Final()), whole) << "piece " << piece;
  }
}

// The class uses the accelerated block function when available; compare it
// with the scalar reference on the same blocks.
TEST(Sha256Test, DispatchedBlocksMatchScalar) {
  const std::vector<uint8_t> data = testing::PatternBytes(64 * 50, 11);
  uint32_t scalar[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  internal::Sha256BlocksScalar(scalar, data.data(), 50);
  // Finish by hand: the message is 3200 bytes, padding is one extra block.
  uint8_t pad[64] = {0x80};
  const uint64_t bits = 3200 * 8;
  for (int i = 0; i < 8; ++i) pad[56 + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  internal::Sha256BlocksScalar(scalar, pad, 1);
  Sha256::Digest expected;
  for (int i = 0; i < 8; ++i) {
    for (int b = 0; b < 4; ++b) expected[4 * i + b] = static_cast<uint8_t>(scalar[i] >> (24 - 8 * b));
  }
  EXPECT_EQ(Sha256::ToHex(Sha256::Hash(data.data(), data.size())), Sha256::ToHex(expected))
      << "implementation " << Sha256Implementation();
}

}  // namespace
}  // namespace slimpack::loader
