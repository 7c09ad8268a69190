// Fuzzes the GGUF reader (gguf::ParseGguf on the bytes in memory: header,
// metadata, tensor infos, offsets), reads every metadata value back through
// its getters and every byte of every tensor it accepted, then runs the
// importer the CLI uses on a .gguf path (gguf::ImportGguf: architecture keys
// to config.json, llama.cpp names, block decoding) on the same bytes. Every
// input also goes to the other llama.cpp file parser, the importance matrix
// (gguf::ParseImatrix), whose corpus files live here too.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/gguf/gguf_import.h"
#include "formats/gguf/gguf_reader.h"
#include "formats/gguf/imatrix_file.h"
#include "fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto imatrix = slimpack::gguf::ParseImatrix(data, size, "fuzz.imatrix");
  if (imatrix.ok()) {
    volatile float sum = 0;
    for (const auto& [name, entry] : imatrix->entries) {
      for (float v : slimpack::gguf::MeanSquares(entry)) sum = sum + v;
    }
  }
  auto file = slimpack::gguf::ParseGguf(data, size, "fuzz.gguf");
  if (!file.ok()) return 0;
  volatile uint64_t sink = 0;
  for (const slimpack::gguf::KeyValue& kv : file->metadata) {
    sink = sink + kv.value.Describe().size() + (file->FindValue(kv.key) != nullptr);
    // Arrays may hold millions of elements; the first and last few suffice.
    const uint64_t n = kv.value.size();
    for (uint64_t i = 0; i < n; i = (i == 3 && n > 8) ? n - 4 : i + 1) {
      sink = sink + kv.value.GetUInt(i).value_or(0) +
             static_cast<uint64_t>(kv.value.GetInt(i).value_or(0)) +
             static_cast<uint64_t>(kv.value.GetFloat(i).value_or(0) != 0) +
             kv.value.GetBool(i).value_or(false) + kv.value.GetString(i).value_or("").size();
    }
  }
  for (const slimpack::gguf::TensorInfo& t : file->tensors) {
    sink = sink + (file->FindTensor(t.name) != nullptr);
    for (uint64_t i = 0; i < t.n_bytes; ++i) sink = sink + t.data[i];
  }
  const std::string path = slimpack::fuzz::WriteScratchFile("model.gguf", data, size);
  (void)slimpack::gguf::ImportGguf(path);
  return 0;
}
