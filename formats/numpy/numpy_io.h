// NumPy .npy and .npz files to and from ir::Tensor. Readers are strict: every
// header field, size and zip structure is checked before any byte is used.
#ifndef SLIMPACK_FORMATS_NUMPY_NUMPY_IO_H_
#define SLIMPACK_FORMATS_NUMPY_NUMPY_IO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/tensor.h"

namespace slimpack::numpy {

// Parses one .npy image (format versions 1.0, 2.0, 3.0; C order; little-endian
// or byte-order-free descrs '<f4 <f8 <f2 <i8 <i4 <i2 |i1 |u1 |b1 <u2 <u4 <u8').
// The tensor owns a copy of the data; `name` becomes its name and
// `source` (a file, or "archive.npz:entry") prefixes every error.
// Errors: InvalidArgument for a bad magic, version, header dict (naming the
// field), a negative dim or an element count that overflows, or trailing
// bytes; OutOfRange when the header or data is truncated; Unimplemented for
// Fortran order, big-endian or unsupported descrs (listing the supported).
absl::StatusOr<ir::Tensor> ParseNpy(const uint8_t* data, uint64_t size,
                                    const std::string& name,
                                    const std::string& source);

// Reads a .npy file (NotFound if it does not exist). The tensor is named
// after the file's stem ("ids.npy" -> "ids").
absl::StatusOr<ir::Tensor> ReadNpy(const std::string& path);

// Encodes `tensor` as a version 1.0 .npy image (2.0 if the header needs it).
// Unimplemented for dtypes NumPy has no descr for (bf16, i4, u4).
absl::StatusOr<std::string> EncodeNpy(const ir::Tensor& tensor);

// Writes `tensor` to `path` (through a temporary file renamed into place).
absl::Status WriteNpy(const std::string& path, const ir::Tensor& tensor);

// How much a .npz may inflate: a 4 MB archive can declare gigabytes of
// deflated data (a zip bomb), so the declared sizes are checked before any
// of it is allocated.
struct NpzReadOptions {
  // Cap on the sum of the declared uncompressed sizes of an archive's
  // deflated entries (stored entries are bytes already in the file and do
  // not count). 0: DefaultNpzInflateBudget().
  uint64_t max_inflated_bytes = 0;
};

struct NpzInflateBudget {
  uint64_t bytes = 0;
  std::string source;  // how it was chosen, quoted in the refusal
};

// The default budget: $SLIMPACK_NPZ_MAX_INFLATE_BYTES when it is a positive
// integer, else the memory available now: the smallest of MemAvailable in
// /proc/meminfo, the cgroup v2 limit minus current usage
// (/sys/fs/cgroup/memory.max, memory.current) and physical memory.
NpzInflateBudget DefaultNpzInflateBudget();

// Reads every "<name>.npy" entry of a .npz archive (stored or deflated), in
// archive order, named without the ".npy" suffix. Errors name the archive
// and the entry: InvalidArgument for malformed zip records, duplicate or
// unsafe names (absolute, '.', '..' or empty parts; '/' is allowed), entries that are not .npy, or sizes that disagree;
// OutOfRange for records past the end of the file; DataLoss for a CRC-32
// mismatch; Unimplemented for encryption, Zip64 end records, multi-disk
// archives and compression methods other than stored/deflate.
// A deflated entry is refused before its data is allocated or inflated:
// ResourceExhausted naming the archive, entry, declared size and budget
// when the declared sizes exceed the budget; InvalidArgument naming both
// sizes when the declared uncompressed size disagrees with what the entry's
// .npy header (inflated alone first) describes. Inflation never writes past
// the declared size; DataLoss if the stream ends early or holds more.
absl::StatusOr<std::vector<ir::Tensor>> ReadNpz(const std::string& path);
absl::StatusOr<std::vector<ir::Tensor>> ReadNpz(const std::string& path,
                                                const NpzReadOptions& options);

// The zip archive comment WriteNpz stores (numpy and zipfile ignore it):
// how `slimpack run` recognises an output it wrote earlier and may replace
// without --force.
inline constexpr char kNpzWriterComment[] = "written by slimpack";

// True if `path` is a regular file ending in a zip end record whose comment
// is kNpzWriterComment. Reads only the last bytes of the file.
bool IsNpzWrittenBySlimpack(const std::string& path);

// Writes `tensors` as an uncompressed .npz (what numpy.savez writes, plus
// the archive comment kNpzWriterComment) with
// entries "<tensor.name>.npy" (names may contain '/', as ONNX value names
// do). InvalidArgument for a duplicate name or one that is empty, absolute,
// has '.', '..' or empty parts; Unimplemented for an archive that would need Zip64.
absl::Status WriteNpz(const std::string& path,
                      const std::vector<ir::Tensor>& tensors);

// Reads a .npz (all entries) or a .npy (one entry named after the stem),
// deciding by extension. InvalidArgument for any other extension.
absl::StatusOr<std::vector<ir::Tensor>> ReadNpyOrNpz(const std::string& path);

}  // namespace slimpack::numpy

#endif  // SLIMPACK_FORMATS_NUMPY_NUMPY_IO_H_
