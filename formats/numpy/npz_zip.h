// The zip pieces the .npz reader (npz_archive.cc) and writer
// (npz_writer.cc) share: record signatures and sizes, entry-name safety,
// little-endian loads and CRC-32. Internal to formats/numpy.
#ifndef SLIMPACK_FORMATS_NUMPY_NPZ_ZIP_H_
#define SLIMPACK_FORMATS_NUMPY_NPZ_ZIP_H_

#include <cstdint>
#include <string>

namespace slimpack::numpy::zip {

inline constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50,
                   kEndSig = 0x06054b50, kZip64LocatorSig = 0x07064b50;
inline constexpr uint64_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22;
inline constexpr uint16_t kStored = 0, kDeflate = 8;
// Deflate cannot expand more than ~1032:1; a larger claim is a zip bomb.
inline constexpr uint64_t kMaxDeflateRatio = 1100;

// ONNX value names like "/model/Add_output_0" are legal keys (numpy.savez
// accepts them too); what is refused is anything that could escape a
// directory if someone extracted the archive: absolute paths, '.', '..',
// empty parts, backslashes and NUL.
bool IsSafeEntryName(const std::string& stem);

// The `bytes`-byte little-endian unsigned integer at p.
uint64_t Le(const uint8_t* p, int bytes);

// CRC-32 of n bytes (zlib's, in chunks zlib's uInt can count).
uint64_t Crc32(const uint8_t* p, uint64_t n);

}  // namespace slimpack::numpy::zip

#endif  // SLIMPACK_FORMATS_NUMPY_NPZ_ZIP_H_
