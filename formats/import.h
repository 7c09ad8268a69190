// Input detection and import dispatch: one entry point that turns a path
// (ONNX file, safetensors file, sharded index, checkpoint directory) into a
// Model, whatever the format.
#ifndef SLIMPACK_FORMATS_IMPORT_H_
#define SLIMPACK_FORMATS_IMPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::formats {

enum class InputKind { kOnnx, kSafetensors, kGguf };

// Decides the input kind from the path (extension, directory contents) and,
// for files with an unknown extension, from the first bytes. NotFound if the
// path does not exist; Unimplemented listing the supported inputs otherwise.
absl::StatusOr<InputKind> DetectInputKind(const std::string& path);

// Imports any supported input and verifies the resulting IR. `threads`
// bounds the threads an importer may use where it copies tensors (a GGUF's
// rotary rows; 0: one per core); the model is the same at any count.
absl::StatusOr<ir::Model> ImportModel(const std::string& path, int threads = 1);

}  // namespace slimpack::formats

#endif  // SLIMPACK_FORMATS_IMPORT_H_
