// Writes the writer tests' fixtures for the CLI test script:
//   DIR/llama/{model.safetensors, config.json, tokenizer.json}
//   DIR/model.onnx
#include <sys/stat.h>

#include <cstdio>
#include <string>

#include "tests/shard/writer/writer_test_util.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  ::mkdir(dir.c_str(), 0755);
  ::mkdir((dir + "/llama").c_str(), 0755);
  slimpack::shard_writer::testing::TinyLlama spec;
  spec.layers = 4;
  spec.hidden = 128;
  spec.intermediate = 256;
  slimpack::shard_writer::testing::WriteTinyLlamaCheckpoint(dir + "/llama", spec);
  slimpack::shard_writer::testing::WriteOnnxFixture(dir + "/model.onnx");
  for (const char* f : {"/llama/model.safetensors", "/llama/config.json",
                        "/llama/tokenizer.json", "/model.onnx"}) {
    if (!slimpack::shard_writer::testing::Exists(dir + f)) {
      std::fprintf(stderr, "failed to write %s%s\n", dir.c_str(), f);
      return 1;
    }
  }
  return 0;
}
