// Fuzzes the standalone loader's checks of untrusted artifact bytes through
// its in-memory entry points, the ones Artifact::Open and the shard mapping
// run: loader::ParseManifest (spec.md section 9) on the input up to its
// first NUL byte, then, if the manifest is accepted, loader::CheckShardHeader
// for every shard it lists on the bytes after the NUL (zero-padded to
// shard::kShardHeaderSize). The self-hash check is off (a mutated manifest
// never matches its SHA-256; ComputeManifestSelfHash is fuzzed on its own),
// as with OpenOptions::check_manifest_hash = false. Then every quantized
// tensor the manifest accepted (up to 2^16 elements) is dequantized with
// the manifest's geometry over payload bytes taken cyclically from the
// bytes after the NUL, as Artifact::DequantizeToF32 would over a shard:
// the decoders then meet every layout, block type and byte pattern the
// manifest checks let through. C++ standard library only, like the loader.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <vector>

#include "formats/shard/format.h"
#include "formats/shard/loader/dequantize.h"
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
  const uint8_t* payload = manifest_size + 1 < size ? data + manifest_size + 1 : nullptr;
  const size_t payload_size = payload ? size - manifest_size - 1 : 0;
  auto fill = [&](uint64_t n) {
    std::vector<uint8_t> out(static_cast<size_t>(n));
    for (size_t i = 0; i < out.size() && payload_size > 0; ++i) out[i] = payload[i % payload_size];
    return out;
  };
  using slimpack::shard::LayoutKind;
  for (const slimpack::loader::TensorInfo& t : manifest->tensors) {
    if (t.layout.kind == LayoutKind::kPlain || t.layout.kind == LayoutKind::kSparse2of4 ||
        t.numel > (1u << 16) || t.nbytes > (1u << 20)) {
      continue;
    }
    // A [0, N] tensor has no elements but N scales: bound those too.
    bool params_small = true;
    for (int32_t aux : {t.layout.scale, t.layout.zero_point}) {
      if (aux >= 0 && manifest->tensors[static_cast<size_t>(aux)].nbytes > (1u << 20)) {
        params_small = false;
      }
    }
    if (!params_small) continue;
    slimpack::loader::QuantizedTensorRef ref;
    ref.layout = t.layout.kind;
    ref.dtype = t.dtype;
    ref.shape = t.shape;
    ref.axis = t.layout.axis;
    ref.group_size = t.layout.group_size;
    ref.block_rows = t.layout.block_rows;
    ref.block_type = t.layout.block_type;
    const std::vector<uint8_t> q = fill(t.nbytes);
    ref.data = q.data();
    ref.data_bytes = q.size();
    std::vector<uint8_t> scale, zp;
    if (t.layout.scale >= 0) {
      const auto& s = manifest->tensors[static_cast<size_t>(t.layout.scale)];
      scale = fill(s.nbytes);
      ref.scale = scale.data();
      ref.scale_count = s.numel;
      ref.scale_dtype = s.dtype;
    }
    if (t.layout.zero_point >= 0) {
      zp = fill(manifest->tensors[static_cast<size_t>(t.layout.zero_point)].nbytes);
      ref.zero_point = zp.data();
      ref.zero_point_bytes = zp.size();
    }
    std::vector<float> out(static_cast<size_t>(t.numel));
    (void)slimpack::loader::DequantizeToF32(ref, out.data(), out.size());
  }
  return 0;
}
