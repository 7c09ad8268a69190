// Best-effort ONNX shape inference that never fails an import.
#ifndef SLIMPACK_FORMATS_ONNX_SHAPE_INFERENCE_H_
#define SLIMPACK_FORMATS_ONNX_SHAPE_INFERENCE_H_

#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace slimpack::onnx_format {

// Runs onnx::shape_inference::InferShapes on a copy of `model` whose large
// tensor payloads were moved out for the duration (so a 2 GiB model is not
// copied), then stores the inferred value_info, and the types of graph
// outputs that had none, back into `model` and its subgraphs. Inference
// errors (ONNX throws) are caught and appended to `warnings`; in that case
// the inference is retried in non-strict mode to keep partial results.
// A model failing ValidateWindowAttributes (window_attributes.h) is not
// inferred at all (libonnx would divide by a zero stride); that is a
// warning too.
void InferShapesInPlace(onnx::ModelProto* model,
                        std::vector<std::string>* warnings);

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_SHAPE_INFERENCE_H_
