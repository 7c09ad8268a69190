// Fuzzes the standalone loader's checks of untrusted artifact bytes through
// its in-memory entry points, the ones Artifact::Open and the shard mapping
// run: loader::ParseManifest (spec.md section 9) on the input up to its
// first NUL byte, then, if the manifest is accepted, loader::CheckShardHeader
// for every shard it lists on the bytes after the NUL (zero-padded to
// shard::kShardHeaderSize). The self-hash check is off (a mutated manifest
// never matches its SHA-256; ComputeManifestSelfHash is fuzzed on its own),
// as with OpenOptions::check_manifest_hash = false. C++ standard library
// only, like the loader.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "formats/shard/format.h"
#include "formats/shard/loader/manifest.h"
#include "formats/shard/loader/shard_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* text = reinterpret_cast<const char*>(data);
  const size_t manifest_size =
      data == nullptr ? 0 : static_cast<size_t>(std::find(text, text + size, '\0') - text);
  const std::string_view manifest_text(text, manifest_size);
  (void)slimpack::loader::ComputeManifestSelfHash(manifest_text);
  slimpack::loader::ManifestOptions options;
  options.check_self_hash = false;
  auto manifest = slimpack::loader::ParseManifest(manifest_text, "manifest.json", options);
  if (!manifest.ok()) return 0;
  uint8_t header[slimpack::shard::kShardHeaderSize] = {};
  if (manifest_size < size) {
    const size_t rest = size - manifest_size - 1;
    std::memcpy(header, data + manifest_size + 1,
                std::min<size_t>(rest, sizeof(header)));
  }
  for (const slimpack::loader::ShardInfo& shard : manifest->shards) {
    (void)slimpack::loader::CheckShardHeader(header, shard, shard.file);
  }
  return 0;
}
