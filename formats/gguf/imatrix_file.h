// llama.cpp's importance-matrix file: what `llama-imatrix -o FILE` writes
// and `llama-quantize --imatrix FILE` reads (the binary ".dat" layout, all
// little-endian):
//
//   int32 n_entries
//   n_entries x { int32 name_len; name bytes; int32 ncall; int32 nval;
//                 float32 values[nval] }
//   optional: int32 last_call; int32 dataset_len; dataset bytes
//
// For each weight, keyed by its GGUF tensor name ("blk.3.ffn_down.weight"),
// values[j] is the sum over calls of the mean of x_j^2 over the tokens of
// that call (stored as mean * ncall), so values[j] / ncall is the mean square
// of input column j: the per-column importance ggml's quantizers weight
// their error with. Mixture-of-experts weights hold n_expert blocks of
// columns one after another.
//
// The file is untrusted input: every count is checked against the bytes
// left before anything is allocated, and errors name the file, the entry and
// the offset.
#ifndef SLIMPACK_FORMATS_GGUF_IMATRIX_FILE_H_
#define SLIMPACK_FORMATS_GGUF_IMATRIX_FILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace slimpack::gguf {

struct ImatrixEntry {
  int32_t ncall = 0;
  std::vector<float> values;  // sum of per-call mean squares, per column
};

struct ImatrixFile {
  std::map<std::string, ImatrixEntry> entries;  // by GGUF tensor name
  int32_t last_call = 0;   // chunks processed (0 when the file omits it)
  std::string dataset;     // the text file llama-imatrix read ("" if omitted)
};

// Parses the bytes of an imatrix file; `path` only names it in errors.
// InvalidArgument for a truncated or inconsistent file, a duplicate name, a
// negative count, or a value that is negative or not finite (a sum of
// squares cannot be); Unimplemented for the GGUF-container imatrix of newer
// llama.cpp releases.
absl::StatusOr<ImatrixFile> ParseImatrix(const uint8_t* data, uint64_t size,
                                         const std::string& path);

// Maps and parses `path`.
absl::StatusOr<ImatrixFile> ReadImatrixFile(const std::string& path);

// The bytes of `file` in the layout above, trailer included (what
// `slimpack calibrate --imatrix` writes; ParseImatrix reads them back
// exactly). Names are written in map order.
std::string SerializeImatrix(const ImatrixFile& file);

// The per-column mean of x^2 (values / ncall), the importance
// llama-quantize hands to ggml's quantizers; values unchanged when ncall is 0.
std::vector<float> MeanSquares(const ImatrixEntry& entry);

}  // namespace slimpack::gguf

#endif  // SLIMPACK_FORMATS_GGUF_IMATRIX_FILE_H_
