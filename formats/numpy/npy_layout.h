// Internal: the layout a .npy header describes, parsed without touching the
// data, so the .npz reader can check a deflated entry's declared size
// against its header (and a memory budget) before inflating the data.
#ifndef SLIMPACK_FORMATS_NUMPY_NPY_LAYOUT_H_
#define SLIMPACK_FORMATS_NUMPY_NPY_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/dtype.h"

namespace slimpack::numpy {

// Bytes before the header dict's length field ends: magic (6), version (2)
// and the length (2 for version 1.0, 4 for 2.0/3.0).
inline constexpr uint64_t kNpyMagicAndVersionBytes = 8;
// The longest header dict the .npz reader inflates before knowing the
// entry's layout (numpy itself refuses headers over 10,000 bytes by
// default; ours are under 256).
inline constexpr uint64_t kMaxNpyHeaderBytes = 1 << 20;

struct NpyLayout {
  std::string descr;           // as written, e.g. "<f4"
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;    // prefix + header length
  uint64_t nbytes = 0;         // dtype x shape
};

// Length of the prefix before the header dict for `major` version (10 or
// 12), or 0 for an unknown version.
uint64_t NpyPrefixBytes(int major);

// Parses the prefix and header dict of a .npy image from its first `size`
// bytes (which must hold at least the whole header; the data is not
// looked at). ParseNpy's errors for magic, version, header dict, dtype,
// fortran order and shape; OutOfRange if the header runs past `size`.
absl::StatusOr<NpyLayout> ParseNpyLayout(const uint8_t* data, uint64_t size,
                                         const std::string& source);

}  // namespace slimpack::numpy

#endif  // SLIMPACK_FORMATS_NUMPY_NPY_LAYOUT_H_
