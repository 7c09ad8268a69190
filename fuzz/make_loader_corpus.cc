// Writes the loader harness's seed corpus: for each sample artifact of the
// loader's own tests (tests/shard/loader), its sealed manifest text, a NUL
// byte, then the first shard::kShardHeaderSize bytes of one of its shards
// (loader_fuzz.cc's input layout).
//   fuzz_make_loader_corpus fuzz/corpus/loader
#include <cstdio>
#include <string>
#include <vector>

#include "formats/shard/format.h"
#include "tests/shard/loader/sample_artifacts.h"
#include "tests/shard/loader/test_artifact_writer.h"

namespace slt = slimpack::loader::testing;

namespace {

void WriteSeed(const std::string& dir, const std::string& name, const slt::TestArtifact& art,
               size_t shard) {
  std::string bytes = art.ManifestText(/*seal=*/true);
  bytes.push_back('\0');
  if (shard < art.shard_bytes.size()) {
    bytes += art.shard_bytes[shard].substr(0, slimpack::shard::kShardHeaderSize);
  }
  slt::WriteFileOrDie(dir + "/" + name, bytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];

  // Nine tensors in two shards, int8/int4 layouts and an ONNX graph.
  slt::TestArtifact sample = slt::TestArtifact::Build(slt::SampleSpec());
  WriteSeed(dir, "sample_shard0", sample, 0);
  WriteSeed(dir, "sample_shard1", sample, 1);

  // make_example_artifact's artifact: int4 without zero points, no graph.
  slt::TestArtifactSpec example;
  slt::TestTensor bias{"bias", "f32", {4}, slt::F32Bytes({0.5f, -1.0f, 2.0f, 0.25f})};
  slt::TestTensor w4{"w.int4", "i4", {4, 8}, slt::PatternBytes(16, 7)};
  w4.layout["kind"] = "int4_groupwise";
  w4.layout["axis"] = 1;
  w4.layout["group_size"] = 4;
  w4.layout["packing"] = "low_nibble_first";
  w4.layout["scale"] = "w.int4.scale";
  slt::TestTensor s4{"w.int4.scale", "f32", {4, 2}, slt::F32Bytes({1, 2, 3, 4, 5, 6, 7, 8})};
  example.tensors = {bias, w4, s4};
  example.carried_files = {{"tokenizer.json", "{\"model\": {\"type\": \"BPE\"}}\n"}};
  WriteSeed(dir, "example", slt::TestArtifact::Build(example), 0);

  // Layered tensors of several dtypes, one shard each (a small cap).
  slt::TestArtifactSpec layered;
  std::vector<std::string> dtypes = {"f16", "bf16", "i32", "u8", "bool", "f64"};
  for (size_t i = 0; i < dtypes.size(); ++i) {
    slt::TestTensor t{"layers." + std::to_string(i) + ".w", dtypes[i], {2, 4},
                      slt::PatternBytes(dtypes[i] == "f64" ? 64 : dtypes[i] == "i32" ? 32
                                        : dtypes[i] == "u8" || dtypes[i] == "bool" ? 8 : 16,
                                        static_cast<uint32_t>(i))};
    t.layer = static_cast<int>(i);
    layered.tensors.push_back(t);
  }
  layered.shard_size_cap = slimpack::shard::kDataRegionOffset + 64;
  WriteSeed(dir, "layered", slt::TestArtifact::Build(layered), 2);

  // Grouped layouts with f16 scales (features f16_scales, int8_groupwise):
  // int8_groupwise with u8 zero points and int4_groupwise, both f16-scaled.
  slt::TestArtifactSpec grouped;
  slt::TestTensor w8{"w.int8", "u8", {4, 8}, slt::PatternBytes(32, 11)};
  w8.layout["kind"] = "int8_groupwise";
  w8.layout["axis"] = 1;
  w8.layout["group_size"] = 4;
  w8.layout["scale"] = "w.int8.scale";
  w8.layout["zero_point"] = "w.int8.zp";
  slt::TestTensor g4 = w4;
  g4.name = "w.int4h";
  g4.layout["scale"] = "w.int4h.scale";
  // 0x3C00 = 1.0 and its neighbours as f16 bits, little-endian.
  std::vector<uint8_t> halves;
  for (int i = 0; i < 8; ++i) {
    halves.push_back(static_cast<uint8_t>(i));
    halves.push_back(0x3C);
  }
  grouped.tensors = {w8,
                     {"w.int8.scale", "f16", {4, 2}, halves},
                     {"w.int8.zp", "u8", {4, 2}, slt::PatternBytes(8, 12)},
                     g4,
                     {"w.int4h.scale", "f16", {4, 2}, halves}};
  slt::TestArtifact grouped_art = slt::TestArtifact::Build(grouped);
  grouped_art.manifest["required_features"].Push(slt::J("f16_scales"));
  grouped_art.manifest["required_features"].Push(slt::J("int8_groupwise"));
  WriteSeed(dir, "grouped_f16_scales", grouped_art, 0);

  // llama.cpp's blocks (feature ggml_blocks): a q4_k super-block row pair
  // and q8_0 rows, block bytes as they come.
  slt::TestArtifactSpec blocks;
  slt::TestTensor k4{"w.q4_k", "u8", {2, 256}, slt::PatternBytes(2 * 144, 13)};
  k4.layout["kind"] = "ggml_blocks";
  k4.layout["axis"] = 1;
  k4.layout["block_type"] = "q4_k";
  slt::TestTensor q8{"w.q8_0", "u8", {3, 32}, slt::PatternBytes(3 * 34, 14)};
  q8.layout["kind"] = "ggml_blocks";
  q8.layout["axis"] = 1;
  q8.layout["block_type"] = "q8_0";
  blocks.tensors = {k4, q8};
  slt::TestArtifact blocks_art = slt::TestArtifact::Build(blocks);
  blocks_art.manifest["required_features"].Push(slt::J("ggml_blocks"));
  WriteSeed(dir, "ggml_blocks", blocks_art, 0);

  // FP8 E4M3 codes with f16 group scales.
  WriteSeed(dir, "fp8_groupwise", slt::Fp8SampleArtifact(/*f16_scales=*/true), 0);
  // The same with w's scales shared by blocks of 3 rows (block_rows).
  WriteSeed(dir, "fp8_block_rows", slt::Fp8SampleArtifact(/*f16_scales=*/true, 3), 0);

  // No tensors at all.
  WriteSeed(dir, "empty", slt::TestArtifact::Build(slt::TestArtifactSpec()), 0);
  return 0;
}
