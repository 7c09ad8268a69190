// `slimpack convert INPUT -o model.onnx --format onnx`: the model after the
// convert stages (prune -> passes -> sparsify -> quantize, as for an
// artifact), or an existing artifact as it is, written as an ONNX model
// that stock ONNX Runtime loads and runs (export/onnx_export.h): slimpack
// ops lowered, static W8A8 as QDQ or QOperator. HF decoder checkpoints are
// written as their full-sequence graph (input_ids -> logits, no KV cache),
// or with --onnx-kv-cache as ONNX Runtime GenAI's decoder layout
// (past_key_values.* in, present.* out) with the tokenizer and config files
// the model carries written beside it.
#ifndef SLIMPACK_CONVERTER_CONVERT_ONNX_H_
#define SLIMPACK_CONVERTER_CONVERT_ONNX_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "converter/convert_request.h"
#include "export/onnx_export.h"

namespace slimpack::converter {

struct OnnxConvertRequest {
  // Input, output, --force, threads and the stages, built and checked by
  // BuildConvertRequest (the recipe's shard size / dtype are not used).
  ConvertRequest convert;
  bool from_artifact = false;  // the input is a slimpack artifact directory
  // The passes were named (--passes / recipe): also run on a decoder's
  // built graph.
  bool explicit_passes = false;
  onnx_export::OnnxExportOptions options;
  bool external_data = false;  // every tensor >= 1 KiB in <stem>.data
  // The decoder with its KV cache, carried files beside the model.
  bool kv_cache = false;
  bool group_query_attention = false;  // --onnx-gqa
};

struct OnnxConvertResult {
  onnx_export::OnnxExportReport report;
  std::string data_file;    // "" when everything is in the model file
  uint64_t model_bytes = 0;
  uint64_t data_bytes = 0;
  // --onnx-kv-cache: the carried files written beside the model (paths).
  std::vector<std::string> carried_written;
};

// From the user's flags. Usage errors (IsUsageError) for flags that do not
// apply to an ONNX export (--dtype, --shard-size, --report, --report-data,
// --gate; every stage flag when the input is an artifact), a bad
// --onnx-profile / --onnx-quant-format, or --onnx-quant-format without
// --quant w8a8.
absl::StatusOr<OnnxConvertRequest> BuildOnnxConvertRequest(const ConvertFlags& flags);

// Output rules first (support/output_path.h: an existing model or data
// file is replaced only with --force; never an input), then import (or read
// the artifact), stages, export preparation and an atomic write. Errors
// name the file, node or tensor (export/onnx_export.h). --onnx-kv-cache on
// a model that is not an HF decoder is InvalidArgument naming the flag and
// the input; each carried file written beside the model follows the output
// rules (an existing one is replaced only with --force, never an input).
absl::StatusOr<OnnxConvertResult> ConvertToOnnx(const OnnxConvertRequest& request);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_CONVERT_ONNX_H_
