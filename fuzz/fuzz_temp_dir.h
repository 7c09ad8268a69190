// A private scratch directory for harnesses whose parser's public entry
// point takes a path (the ONNX importer, .npz, tokenizer.json, GGUF and
// safetensors importers): one mkdtemp directory per process under $TMPDIR,
// files overwritten per input, removed at exit. Nothing is written outside
// it. C++ standard library and POSIX only, so the loader harness can use it.
#ifndef SLIMPACK_FUZZ_FUZZ_TEMP_DIR_H_
#define SLIMPACK_FUZZ_FUZZ_TEMP_DIR_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace slimpack::fuzz {

// Writes `size` bytes to `name` (a plain file name) inside the process's
// scratch directory, replacing what was there, and returns its path. Aborts
// if the directory or the file cannot be written: a harness that silently
// skipped inputs would report coverage it never had.
std::string WriteScratchFile(const std::string& name, const uint8_t* data, size_t size);

}  // namespace slimpack::fuzz

#endif  // SLIMPACK_FUZZ_FUZZ_TEMP_DIR_H_
