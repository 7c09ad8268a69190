// Turns a path given to `slimpack eval` / `slimpack run` into a model the
// interpreter can run: ONNX files as imported, HF checkpoints through the
// Llama-family decoder graph builder, slimpack artifacts read back.
#ifndef SLIMPACK_EVAL_RUNNABLE_MODEL_H_
#define SLIMPACK_EVAL_RUNNABLE_MODEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace slimpack::eval {

// ONNX: ImportModel's graph. Safetensors checkpoint (file, index or
// directory): BuildDecoderGraph on it. A slimpack artifact directory
// (holding manifest.json): ReadArtifactModel, then the same by the
// artifact's source format (ONNX-origin artifacts run their graph, HF ones
// go through BuildDecoderGraph); quantized weights run dequantized (see
// runtime/graph_plan.cc). Errors of the importer/reader/builder pass
// through.
absl::StatusOr<ir::Model> LoadRunnableModel(const std::string& path);

}  // namespace slimpack::eval

#endif  // SLIMPACK_EVAL_RUNNABLE_MODEL_H_
