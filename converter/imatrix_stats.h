// Importance-matrix files (llama.cpp's .dat layout, formats/gguf/
// imatrix_file.h) as precomputed statistics for `convert --algo imatrix`:
// `slimpack calibrate --imatrix` writes one from calibration runs, `convert
// --imatrix FILE` reads it (or llama-imatrix's) instead of running the
// model, so a conversion reads each weight only when it quantizes it and
// every part of a split conversion uses the same statistics.
//
// Keys: for an HF decoder checkpoint the GGUF tensor names llama.cpp uses
// ("blk.3.ffn_down.weight"), so the files are interchangeable with
// llama-imatrix's; for an ONNX graph the weights' own names.
#ifndef SLIMPACK_CONVERTER_IMATRIX_STATS_H_
#define SLIMPACK_CONVERTER_IMATRIX_STATS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/gguf/imatrix_file.h"
#include "ir/graph.h"
#include "quantize/importance_matrix.h"

namespace slimpack::converter {

// The file of `m` (ComputeImportanceMatrix of `model`): one entry per
// weight with ncall 1 and the mean squares as values, so reading it back
// gives the same floats; last_call = the samples, dataset = `dataset`.
absl::StatusOr<gguf::ImatrixFile> ImatrixOf(const ir::Model& model,
                                            const quantize::ImportanceMatrix& m,
                                            const std::string& dataset);

// Reads `path` and returns the mean squares by `model`'s weight names.
// InvalidArgument naming the file and entry for an entry that names no
// weight of the model; the file's own parse errors.
absl::StatusOr<std::map<std::string, std::vector<float>>> ReadImatrixStats(
    const ir::Model& model, const std::string& path);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_IMATRIX_STATS_H_
