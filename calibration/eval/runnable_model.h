// Turns a path given to `slimpack eval` / `slimpack run` into a model the
// interpreter can run: ONNX files as imported, HF checkpoints through the
// Llama-family decoder graph builder.
#ifndef SLIMPACK_CALIBRATION_EVAL_RUNNABLE_MODEL_H_
#define SLIMPACK_CALIBRATION_EVAL_RUNNABLE_MODEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "converter/ir/graph.h"

namespace slimpack::eval {

// ONNX: ImportModel's graph. Safetensors checkpoint (file, index or
// directory): BuildDecoderGraph on it. A slimpack artifact directory
// (holding manifest.json): Unimplemented (running artifacts is not wired
// up yet). Errors of the importer/builder pass through.
absl::StatusOr<ir::Model> LoadRunnableModel(const std::string& path);

}  // namespace slimpack::eval

#endif  // SLIMPACK_CALIBRATION_EVAL_RUNNABLE_MODEL_H_
