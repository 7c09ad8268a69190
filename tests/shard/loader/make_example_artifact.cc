// Writes a small example artifact (f32, int8 per-channel and int4
// group-wise tensors plus a carried tokenizer.json) into a new directory,
// for the examples and the install test.
//   make_example_artifact <dir>
#include <sys/stat.h>

#include <cstdio>

#include "tests/shard/loader/test_artifact_writer.h"

namespace slt = slimpack::loader::testing;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <new-dir>\n", argv[0]);
    return 2;
  }
  if (::mkdir(argv[1], 0755) != 0) {
    std::perror(argv[1]);
    return 1;
  }
  slt::TestArtifactSpec spec;
  slt::TestTensor bias{"bias", "f32", {4}, slt::F32Bytes({0.5f, -1.0f, 2.0f, 0.25f})};
  slt::TestTensor w8{"w.int8", "i8", {2, 3}, {1, 2, 3, 0xFF, 0xFE, 0xFD}};
  w8.layout["kind"] = "int8_per_channel";
  w8.layout["axis"] = 0;
  w8.layout["scale"] = "w.int8.scale";
  slt::TestTensor s8{"w.int8.scale", "f32", {2}, slt::F32Bytes({0.5f, 0.25f})};
  slt::TestTensor w4{"w.int4", "i4", {4, 8}, slt::PatternBytes(16, 7)};
  w4.layout["kind"] = "int4_groupwise";
  w4.layout["axis"] = 1;
  w4.layout["group_size"] = 4;
  w4.layout["packing"] = "low_nibble_first";
  w4.layout["scale"] = "w.int4.scale";
  slt::TestTensor s4{"w.int4.scale", "f32", {4, 2}, slt::F32Bytes({1, 2, 3, 4, 5, 6, 7, 8})};
  spec.tensors = {bias, w8, s8, w4, s4};
  spec.carried_files = {{"tokenizer.json", "{\"model\": {\"type\": \"BPE\"}}\n"}};
  slt::TestArtifact art = slt::TestArtifact::Build(spec);
  if (!art.Write(argv[1]).ok()) return 1;
  std::printf("wrote %s\n", argv[1]);
  return 0;
}
