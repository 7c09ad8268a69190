// Calibration datasets: a stream of model-input samples read one file at a
// time, so memory does not grow with the dataset.
//
// Rules (documented for users in `slimpack calibrate --help`):
//  - A source is a directory or an explicit list of files. A directory
//    contributes its regular files with a supported extension, sorted by
//    byte-wise file name (not recursive); other files are ignored, and a
//    directory with none is an error. Listed files keep the given order.
//  - .npz / .safetensors: one array per model input, named after the input
//    (or after the name given by `rename`); arrays matching no input are
//    ignored. .npy: one array, allowed only for single-input models.
//  - Batch dim: an array whose rank equals the input's rank holds a batch
//    along dim 0; one of rank - 1 is a single sample (a batch dim of 1 is
//    added). Batches are cut into runs of `max_batch` rows (or of the
//    input's static dim 0 when it has one). All inputs of a file must have
//    the same number of rows. dtype must equal the input's dtype, except
//    that an i64 input also takes an i32 array, widened exactly (token
//    files are often int32; widening cannot change a value, so it is done
//    for every i64 input rather than guessing which ones hold ids by name);
//    every static non-batch dim must match.
//  - Token ids: the whole array for a token-ids input (calibration::
//    IsTokenIdsInput: input_ids) is checked when Next() loads its file,
//    like the other array checks: a negative id, or one >= `vocab_size`
//    when that is known, is an error naming the file, the position in the
//    file's array ([row, column]) and the value. Gather would otherwise
//    wrap a negative id to a valid row without a word.
//  - .txt token-id files (LMs): each non-blank line is one sequence of
//    whitespace-separated non-negative integers (below `vocab_size` when
//    known), fed as [1, L] to the integer input (named input_ids, or the
//    only integer input);
//    attention_mask gets ones and position_ids 0..L-1; any other input is
//    an error.
//  - Random (smoke runs only, not calibration): N samples, unknown dims = 1,
//    floats uniform in [-1, 1), integers in [0, 16), from a SplitMix64
//    stream seeded with `seed` (portable: no std:: distributions).
#ifndef SLIMPACK_CALIBRATION_DATASET_H_
#define SLIMPACK_CALIBRATION_DATASET_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/rt_tensor.h"
#include "ir/graph.h"

namespace slimpack::calibration {

struct DatasetOptions {
  // Model input name -> array name in the data files.
  std::map<std::string, std::string> rename;
  int64_t max_batch = 32;
  // The model's vocabulary (KnownVocabSize in token_ids.h): token ids must
  // be below it. 0 = unknown (ONNX models): only negative ids are refused.
  int64_t vocab_size = 0;
  // max_position_embeddings (KnownMaxPositions): a token sequence longer
  // than this, or an empty one, is refused. 0 = unknown: only empty ones.
  int64_t max_positions = 0;
};

struct DataFileDigest {
  std::string name;  // base name: tables carry no absolute paths
  uint64_t bytes = 0;
  std::string sha256;
};

struct Sample {
  std::string source;  // "a.npz", "eval.safetensors[32:64]", "random#3"
  int64_t rows = 0;    // samples in this run (batch size)
  std::map<std::string, runtime::RtTensor> inputs;
};

class Dataset {
 public:
  // `inputs` are the model inputs to feed (graph inputs that are not
  // initializers). Hashes every file up front (streamed, 1 MiB buffer).
  // NotFound for a missing path; InvalidArgument for an empty directory;
  // Unimplemented for a listed file with an unsupported extension.
  static absl::StatusOr<Dataset> Open(const std::vector<std::string>& paths,
                                      std::vector<ir::ValueInfo> inputs,
                                      DatasetOptions options);
  static absl::StatusOr<Dataset> Random(int64_t samples, uint64_t seed,
                                        std::vector<ir::ValueInfo> inputs);

  Dataset(Dataset&&) noexcept;
  Dataset& operator=(Dataset&&) noexcept;
  ~Dataset();

  // The next run's inputs, or nullopt at the end. Errors name the file and
  // the input, with expected vs found dtype/shape.
  absl::StatusOr<std::optional<Sample>> Next();
  // Starts over from the first sample.
  void Rewind();
  // Rewinds, then counts the samples (Sample::rows) the first `max_runs`
  // runs hold (a run batches several), as llama.cpp's chunks_count and our
  // imatrix report them; leaves the dataset rewound. Next's errors.
  absl::StatusOr<int64_t> CountSamples(int64_t max_runs);

  bool is_random() const;
  uint64_t seed() const;
  const std::vector<DataFileDigest>& files() const;

 private:
  struct Impl;
  explicit Dataset(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The data files `paths` stand for, in the order Dataset::Open reads them
// (directories expanded by the rules above). NotFound / InvalidArgument /
// Unimplemented as Dataset::Open.
absl::StatusOr<std::vector<std::string>> ExpandDataPaths(const std::vector<std::string>& paths);

// Base name, size and SHA-256 of each file, in order (what a calibration
// table and an artifact's producer.calibration record).
absl::StatusOr<std::vector<DataFileDigest>> DigestDataFiles(const std::vector<std::string>& files);

// The inputs of `graph` that a dataset must provide.
std::vector<ir::ValueInfo> FeedInputs(const ir::Graph& graph);

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_DATASET_H_
