// The record slimpack leaves in a GGUF it wrote from an already-quantized
// source (gguf_format.h, kRequantizedTensorsKey / kRequantizedRelL2Key):
// which tensors no ggml type could carry, so that they were decoded and
// encoded again, the type each got, and the error it gained. `inspect`
// prints it; a reader of anyone else's GGUF finds none.
#ifndef SLIMPACK_FORMATS_GGUF_GGUF_REQUANTIZED_H_
#define SLIMPACK_FORMATS_GGUF_GGUF_REQUANTIZED_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/gguf/gguf_reader.h"

namespace slimpack::gguf {

struct RequantizedTensor {
  std::string name;  // the GGUF tensor
  std::string type;  // its ggml type ("q4_K", ...)
  double rel_l2 = 0;  // ||decoded - source|| / ||source||
};

// Empty when the file has neither key. InvalidArgument naming the file and
// the key when only one is present, they differ in length or element type,
// a name is not a tensor of the file, or an error is negative or NaN (+inf,
// an encoding that overflowed, is read as it is).
absl::StatusOr<std::vector<RequantizedTensor>> ReadRequantizedTensors(const GgufFile& file);

}  // namespace slimpack::gguf

#endif  // SLIMPACK_FORMATS_GGUF_GGUF_REQUANTIZED_H_
